"""The fine-tuning export (seed 001 §29.4–29.5): one organisation's reviewed examples as a
provider's JSONL, with a dataset card next to it.

Only what a person accepted (``accepted``, or ``edited``: human review is required) and never a
held-out candidate; at most ``export_max`` (500, §29.5) and ``--limit`` examples, at most
``per_person_max`` from one person and ``per_tool_max`` of one tool (so one source cannot
dominate); the same masked input and target once. Oldest first, so a repeated export with the
same filters picks the same examples.

The masking check: every line, and every string in it, is scanned with the sanitiser's
detectors; one unmasked secret or personal value (a placeholder such as 「[PHONE_1]」 is the
masking, not a finding) and nothing is written. The JSONL and the card are written to
temporary files and renamed only after the check; the export is recorded in
``orgs/{org}/ft_exports/{id}`` with its card and the candidate ids it took.

Consent: the export honours the organisation's consent as it is now (``settings/company.
ft_staging``, ``charter ft staging``): an organisation that turned staging off exports nothing
(``staging_off``), whatever was staged and reviewed before.

Pseudonyms (``finetune.pseudonyms``): every person of the directory, every ``@mention`` and
user id in an example is replaced by the organisation's stable pseudonym (「社員A」), before
the dedupe, the caps and the masking check; the mapping, grown by the people this export met,
is sealed with the vault's key before a file is written (no key: ``no_vault_key``, nothing
written).

The card (``FILE.card.json``): format, organisation, that names were pseudonymised, the count and the counts by outcome, tool,
route and kind, the skipped by reason (``held_out``, ``cap``, ``duplicate``, ``not_reviewed``,
``rejected``, ``no_target``, ``invalid``), the date range, the filters, the caps, the masking check and the
JSONL's sha256.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

from cryptography.fernet import MultiFernet
from pydantic import ValidationError

from shared_lib import collections
from shared_lib.adapters.scoped import scoped
from shared_lib.errors import ArgumentError
from shared_lib.features.finetune.state import pseudonyms
from shared_lib.features.finetune.state.config import FinetuneConfig, load_config, opted_in
from shared_lib.features.finetune.state.formats import FORMATS, build_line, parse_line
from shared_lib.features.finetune.state.review import ACCEPTED
from shared_lib.ids import new_short_id
from shared_lib.ports import Doc, Store
from shared_lib.privacy.sanitizer import PLACEHOLDER, Sanitizer

SCAN_LIMIT = 10_000  # candidates read per export (an organisation's staging is capped per day)
Rename = Callable[[Any], Any]  # what an example's text becomes before it is exported
SKIP_REASONS = ("held_out", "not_reviewed", "rejected", "no_target", "invalid", "duplicate", "cap")


@dataclass(frozen=True)
class ExportFilter:
    since: date | None = None
    until: date | None = None
    limit: int | None = None

    def admits(self, doc: Doc) -> bool:
        at = (doc.get("source") or {}).get("created_at")
        day = at.date() if isinstance(at, datetime) else None
        if day is None:
            return self.since is None and self.until is None
        return (self.since is None or day >= self.since) and (self.until is None or day <= self.until)


@dataclass
class Selection:
    """The examples an export takes, in order, and what it left and why."""

    lines: list[tuple[str, str, Doc]] = field(default_factory=list)  # (candidate id, line, candidate)
    skipped: Counter[str] = field(default_factory=Counter)


@dataclass(frozen=True)
class ExportResult:
    ok: bool
    # "written", "nothing_to_export", "masking_check_failed", "staging_off", "no_vault_key",
    # "pseudonyms_changed" (another export sealed new names meanwhile: run it again)
    reason: str
    card: dict[str, Any]
    findings: list[dict[str, Any]]


def user_content(doc: Doc) -> str:
    """What the brain was given: the compact context, then the person's message."""
    given = doc.get("input") or {}
    context, message = str(given.get("context") or "").strip(), str(given.get("user") or "").strip()
    return f"{context}\n\n# メッセージ\n{message}" if context else message


def assistant_content(doc: Doc, rename: Rename = lambda v: v) -> str:
    """The accepted target in the brain's output schema (the proposal JSON)."""
    target = doc.get("target") or {}
    return json.dumps(rename(target.get("proposal") or {}), ensure_ascii=False, sort_keys=True)


def select(
    docs: list[tuple[str, Doc]],
    fmt: str,
    flt: ExportFilter,
    cfg: FinetuneConfig,
    rename: Rename = lambda v: v,
) -> Selection:
    chosen = Selection()
    seen: set[str] = set()
    per_person: Counter[str] = Counter()
    per_tool: Counter[str] = Counter()
    most = min(cfg.export_max, flt.limit or cfg.export_max)
    ordered = sorted(docs, key=lambda d: (str((d[1].get("source") or {}).get("created_at") or ""), d[0]))
    for cid, doc in ordered:
        if not flt.admits(doc):
            continue
        reason = _not_exported(doc)
        line = _line(fmt, doc, cfg, rename) if reason is None else None
        if line is None:  # no reason: an empty input is no example of the provider's format
            chosen.skipped[reason or "invalid"] += 1
            continue
        key = hashlib.sha256(line.encode()).hexdigest()
        source = doc.get("source") or {}
        person, tool = str(source.get("user_id") or ""), str(source.get("tool") or "(reply)")
        if key in seen:
            chosen.skipped["duplicate"] += 1
        elif (
            len(chosen.lines) >= most
            or per_person[person] >= cfg.per_person_max
            or per_tool[tool] >= cfg.per_tool_max
        ):
            chosen.skipped["cap"] += 1
        else:
            seen.add(key)
            per_person[person] += 1
            per_tool[tool] += 1
            chosen.lines.append((cid, line, doc))
    return chosen


def _line(fmt: str, doc: Doc, cfg: FinetuneConfig, rename: Rename) -> str | None:
    try:
        return build_line(
            fmt,
            system=cfg.system_text,
            user=rename(user_content(doc)),
            assistant=assistant_content(doc, rename),
        )
    except ValidationError:
        return None


def _not_exported(doc: Doc) -> str | None:
    if doc.get("held_out"):
        return "held_out"  # never exported, whatever its review
    status = doc.get("status")
    if status == "rejected":
        return "rejected"
    if status not in ACCEPTED:
        return "not_reviewed"
    if not (doc.get("target") or {}).get("proposal"):
        return "no_target"
    return None


def masking_findings(
    lines: list[tuple[str, str, Doc]], sanitizer: Sanitizer | None = None
) -> list[dict[str, Any]]:
    """The lines carrying a value the sanitiser would mask (the candidate id and where)."""
    s = sanitizer or Sanitizer.default()
    found: list[dict[str, Any]] = []
    for cid, line, _ in lines:
        texts = [line, *_strings(json.loads(line))]
        if any(s.contains_secret(t) for t in texts):
            found.append({"candidate_id": cid, "labels": sorted(_labels(s, texts))})
    return found


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        nested = value.strip()
        if nested.startswith("{"):  # the assistant's content is itself JSON: its strings too
            try:
                return [value, *_strings(json.loads(nested))]
            except json.JSONDecodeError:
                return [value]
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _labels(s: Sanitizer, texts: list[str]) -> set[str]:
    """The rule labels found (``PHONE``, ``API_KEY``), never the values."""
    return {m.group(1) for t in texts for key in s.mask(t)[1] if (m := PLACEHOLDER.match(key))}


def build_card(
    org: str, fmt: str, sel: Selection, flt: ExportFilter, cfg: FinetuneConfig, *, now: datetime
) -> dict[str, Any]:
    sources = [d.get("source") or {} for _, _, d in sel.lines]
    times = sorted(s["created_at"] for s in sources if isinstance(s.get("created_at"), datetime))
    return {
        "format": fmt,
        "org": org,
        "created_at": now.isoformat(),
        "count": len(sel.lines),
        "counts": {
            "outcome": dict(Counter(str(s.get("outcome") or "") for s in sources)),
            "tool": dict(Counter(str(s.get("tool") or "(reply)") for s in sources)),
            "route": dict(Counter(str(s.get("route") or "") for s in sources)),
            "kind": dict(Counter(str(d.get("kind") or "") for _, _, d in sel.lines)),
            "status": dict(Counter(str(d.get("status") or "") for _, _, d in sel.lines)),
        },
        "skipped": {reason: int(sel.skipped.get(reason, 0)) for reason in SKIP_REASONS},
        "date_range": {
            "first": times[0].isoformat() if times else None,
            "last": times[-1].isoformat() if times else None,
        },
        "filters": {
            "since": flt.since.isoformat() if flt.since else None,
            "until": flt.until.isoformat() if flt.until else None,
            "limit": flt.limit,
        },
        "caps": {
            "export_max": cfg.export_max,
            "per_person_max": cfg.per_person_max,
            "per_tool_max": cfg.per_tool_max,
        },
        "held_out_percent": cfg.held_out_percent,
    }


def export(
    store: Store,
    org: str,
    *,
    fmt: str,
    out: Path,
    now: datetime,
    cipher: MultiFernet | None,
    flt: ExportFilter | None = None,
    cfg: FinetuneConfig | None = None,
) -> ExportResult:
    """Write ``out`` and ``out.card.json`` for one organisation, or nothing (see the docstring)."""
    if fmt not in FORMATS:
        raise ArgumentError(f"format is one of {', '.join(FORMATS)}")
    cfg, flt = cfg or load_config(), flt or ExportFilter()
    # read through the organisation's read-only view: a path of another organisation is refused
    view = scoped(store, org, read_only=True)
    if not opted_in(view, org):  # the consent as it is now, not as it was when staged
        return ExportResult(False, "staging_off", {"org": org, "format": fmt}, [])
    try:
        names = pseudonyms.load(store, org, cipher)
    except pseudonyms.PseudonymError as exc:
        return ExportResult(False, "no_vault_key", {"org": org, "format": fmt, "error": str(exc)}, [])
    before, matcher = dict(names.mapping), pseudonyms.Matcher(pseudonyms.directory(view, org))
    docs = view.query(collections.collection_path("ft_candidates", org=org), limit=SCAN_LIMIT)
    sel = select(docs, fmt, flt, cfg, lambda value: matcher.replace_obj(value, names))
    card = build_card(org, fmt, sel, flt, cfg, now=now)
    card["pseudonymised"] = {
        "names": True,
        "what": "every person of the directory (names, readings, romaji), @mentions and user ids",
        "as": f"a stable pseudonym per organisation ({pseudonyms.label(0)}, {pseudonyms.label(1)}, …)",
        "people": len(names.used),
    }
    findings = masking_findings(sel.lines)
    card["masking_check"] = {"passed": not findings, "lines": len(sel.lines), "findings": len(findings)}
    if findings:
        return ExportResult(False, "masking_check_failed", card, findings)
    if not sel.lines:
        return ExportResult(False, "nothing_to_export", card, [])
    for _, line, _ in sel.lines:  # every line reads back as the provider's format
        parse_line(fmt, line)
    assert cipher is not None  # pseudonyms.load refused without one
    try:  # sealed before any file is written: the same person has the same name next time
        pseudonyms.save(store, org, cipher, before, names)
    except pseudonyms.PseudonymError as exc:
        return ExportResult(False, "pseudonyms_changed", {**card, "error": str(exc)}, [])
    body = "".join(f"{line}\n" for _, line, _ in sel.lines).encode()
    export_id = new_short_id("ftx")
    card.update(sha256=hashlib.sha256(body).hexdigest(), file=out.name, export_id=export_id)
    _write_atomic(out, body)
    _write_atomic(card_path(out), json.dumps(card, ensure_ascii=False, indent=2).encode())
    store.set(
        collections.path("ft_exports", org=org, id=export_id),
        {**card, "candidate_ids": [cid for cid, _, _ in sel.lines], "at": now},
    )
    return ExportResult(True, "written", card, [])


def card_path(out: Path) -> Path:
    return out.with_name(f"{out.stem}.card.json")


def _write_atomic(path: Path, body: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(body)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
