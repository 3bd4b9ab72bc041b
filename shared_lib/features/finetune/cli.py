"""``charter ft``: the fine-tuning data pipeline's review and export (seed 001 §29).

charter ft list --org ORG [--status pending|accepted|edited|rejected] [--limit N] [--json]
charter ft show --org ORG ID
charter ft accept --org ORG ID --by USER
charter ft edit --org ORG ID (--reply TEXT | --file PROPOSAL.json) --by USER
charter ft reject --org ORG ID --reason TEXT --by USER
charter ft export --org ORG --format anthropic|openai --out FILE.jsonl [--since DATE] [--until DATE] [--limit N]
charter ft staging --org ORG [on|off] [--by USER]   whether the organisation's turns are staged

Candidates are staged by the background memory layer for an organisation that opted in
(``settings/company.ft_staging``, default off; ``charter ft staging --org ORG on``: level 6). Review is a person's (seed 001 §29.5): ``--by`` is
required and names a level-6 person of the organisation's directory, recorded on the review. The
export honours the organisation's consent as it is now (staging off: it refuses, nothing
written), writes accepted and edited examples only, never a held-out one, within the caps, with
every person's name, @mention and user id replaced by the organisation's stable pseudonym
(「社員A」; the mapping sealed with the vault key), and ``FILE.card.json`` beside it; a masking
check that finds a value in clear writes nothing.

Exit codes: 0 done; 1 a candidate that is not there, a review the person's level refuses or
who is not in the directory, a review that cannot be made as asked (accepting a corrected
candidate without a target), an export of an organisation whose staging is off, a failed
masking check or nothing to export; 2 bad input (an id, a date, a file, no ``--by``), no store
configured or no vault key to seal the pseudonyms.
"""

from __future__ import annotations

import argparse
import json
from datetime import date
from pathlib import Path
from typing import Any

from shared_lib.cli.console import NO_STORE, json_text
from shared_lib.cli.operations import runtime_for, store_options
from shared_lib.cli.runner import EXIT_FINDING, EXIT_OK, EXIT_USAGE, fail
from shared_lib.errors import ConfigError
from shared_lib.features.finetune.state import review
from shared_lib.features.finetune.state.config import opted_in, set_opt_in
from shared_lib.features.finetune.state.export import ExportFilter, card_path, export
from shared_lib.features.finetune.state.formats import FORMATS
from shared_lib.memory.ingest import NotAllowed, check_level
from shared_lib.runtime import Runtime


def register(subparsers: Any) -> None:
    ft = subparsers.add_parser("ft", help="fine-tuning data: review staged turns, export a dataset")
    sub = ft.add_subparsers(dest="ft_command", metavar="COMMAND")
    ls = sub.add_parser("list", help="the organisation's staged candidates")
    _org(ls)
    ls.add_argument("--status", choices=review.STATUSES)
    ls.add_argument("--limit", type=int, default=50, choices=range(1, 1001), metavar="1-1000")
    ls.add_argument("--json", action="store_true", help="one JSON object")
    ls.set_defaults(func=run_list)
    show = sub.add_parser("show", help="one candidate as stored (masked)")
    _org(show)
    show.add_argument("id")
    show.set_defaults(func=run_show)
    ok = sub.add_parser("accept", help="accept a candidate as staged")
    _org(ok, by=True, reviewer=True)
    ok.add_argument("id")
    ok.set_defaults(func=run_accept)
    edit = sub.add_parser("edit", help="give a candidate a new target (a reply, or a proposal file)")
    _org(edit, by=True, reviewer=True)
    edit.add_argument("id")
    given = edit.add_mutually_exclusive_group(required=True)
    given.add_argument("--reply", help="the reply the assistant should have given")
    given.add_argument("--file", type=Path, help="a proposal in the brain's output schema (JSON)")
    edit.set_defaults(func=run_edit)
    no = sub.add_parser("reject", help="reject a candidate, with the reason")
    _org(no, by=True, reviewer=True)
    no.add_argument("id")
    no.add_argument("--reason", required=True)
    no.set_defaults(func=run_reject)
    out = sub.add_parser("export", help="accepted examples as a provider's fine-tuning JSONL, with a card")
    _org(out)
    out.add_argument("--format", required=True, choices=FORMATS)
    out.add_argument("--out", required=True, type=Path, help="FILE.jsonl (the card: FILE.card.json)")
    out.add_argument("--since", type=_day, help="YYYY-MM-DD, staged on or after (UTC)")
    out.add_argument("--until", type=_day, help="YYYY-MM-DD, staged on or before (UTC)")
    out.add_argument("--limit", type=int, choices=range(1, 501), metavar="1-500")
    out.set_defaults(func=run_export)
    opt = sub.add_parser("staging", help="show, or turn on or off, the staging of the organisation's turns")
    _org(opt, by=True)
    opt.add_argument("state", nargs="?", choices=("on", "off"), help="omit to show the current state")
    opt.set_defaults(func=run_staging)


def _org(p: argparse.ArgumentParser, *, by: bool = False, reviewer: bool = False) -> None:
    p.add_argument("--org", required=True, help="the organisation")
    if reviewer:
        p.add_argument("--by", required=True, help="the reviewer: a level-6 person of the directory")
    elif by:
        p.add_argument("--by", help="the person, level 6 (default: the operator)")
    store_options(p)


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date (YYYY-MM-DD)") from exc


def _runtime(args: argparse.Namespace) -> Runtime | None:
    try:
        return runtime_for(args)
    except ConfigError:
        return None


def _bad_name(*values: str) -> bool:
    return any(not v.strip() or "/" in v for v in values)


def run_list(args: argparse.Namespace) -> int:
    rt = _runtime(args)
    if rt is None:
        return fail(NO_STORE, EXIT_USAGE)
    if _bad_name(args.org):
        return fail("ft: --org names one organisation", EXIT_USAGE)
    items = review.list_candidates(rt.store, args.org, args.status, args.limit)
    if args.json:
        print(json_text({"org": args.org, "candidates": items}))
        return EXIT_OK
    print(f"{'id':<28} {'kind':<10} {'status':<9} {'held':<4} {'tool':<22} {'route':<8} input")
    for c in items:
        source = c.get("source") or {}
        text = " ".join(str((c.get("input") or {}).get("user") or "").split())[:40]
        held = "yes" if c.get("held_out") else ""
        print(
            f"{c['id']:<28} {c.get('kind', ''):<10} {c.get('status', ''):<9} {held:<4} "
            f"{source.get('tool') or '-':<22} {source.get('route', ''):<8} {text}"
        )
    return EXIT_OK


def run_show(args: argparse.Namespace) -> int:
    return _reviewing(args, lambda rt: review.get_candidate(rt.store, args.org, args.id), show=True)


def run_accept(args: argparse.Namespace) -> int:
    return _reviewing(args, lambda rt: review.accept(rt.store, args.org, args.id, now=rt.clock(), by=args.by))


def run_reject(args: argparse.Namespace) -> int:
    return _reviewing(
        args,
        lambda rt: review.reject(rt.store, args.org, args.id, reason=args.reason, now=rt.clock(), by=args.by),
    )


def run_edit(args: argparse.Namespace) -> int:
    proposal: dict[str, Any] | None = None
    if args.file is not None:
        try:
            proposal = json.loads(args.file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            return fail(f"ft: {args.file}: not a JSON proposal ({exc})", EXIT_USAGE)
        if not isinstance(proposal, dict):
            return fail(f"ft: {args.file}: not a JSON object", EXIT_USAGE)
    return _reviewing(
        args,
        lambda rt: review.edit(
            rt.store,
            args.org,
            args.id,
            now=rt.clock(),
            reply=args.reply,
            proposal=proposal,
            by=args.by,
            known_tools=set(rt.registry.names()),
        ),
    )


def _reviewing(args: argparse.Namespace, act: Any, *, show: bool = False) -> int:
    rt = _runtime(args)
    if rt is None:
        return fail(NO_STORE, EXIT_USAGE)
    if _bad_name(args.org, args.id):
        return fail("ft: --org and the id name one organisation and one candidate (no '/')", EXIT_USAGE)
    try:
        doc = act(rt)
    except review.ReviewError as exc:
        return fail(f"ft: {exc}", EXIT_USAGE if exc.code == "invalid" else EXIT_FINDING)
    except NotAllowed as exc:
        return fail(f"ft: {exc}", EXIT_FINDING)
    if show:
        print(json_text(doc))
    else:
        print(f"{doc['id']} {doc['status']} by {(doc.get('review') or {}).get('by')}")
    return EXIT_OK


def run_staging(args: argparse.Namespace) -> int:
    rt = _runtime(args)
    if rt is None:
        return fail(NO_STORE, EXIT_USAGE)
    if _bad_name(args.org):
        return fail("ft: --org names one organisation", EXIT_USAGE)
    if args.state is not None:
        try:
            check_level(
                rt.store, args.org, args.by, review.REVIEW_LEVEL, "turning fine-tuning staging on or off"
            )
        except NotAllowed as exc:
            return fail(f"ft: {exc}", EXIT_FINDING)
        set_opt_in(rt.store, args.org, args.state == "on")
    state = "on" if opted_in(rt.store, args.org) else "off"
    print(f"fine-tuning staging for {args.org}: {state}")
    return EXIT_OK


def run_export(args: argparse.Namespace) -> int:
    rt = _runtime(args)
    if rt is None:
        return fail(NO_STORE, EXIT_USAGE)
    if _bad_name(args.org):
        return fail("ft: --org names one organisation", EXIT_USAGE)
    if args.since and args.until and args.since > args.until:
        return fail("ft: --since is after --until", EXIT_USAGE)
    if args.out.exists() and args.out.is_dir():
        return fail(f"ft: {args.out} is a folder, not a file", EXIT_USAGE)
    flt = ExportFilter(since=args.since, until=args.until, limit=args.limit)
    result = export(
        rt.store, args.org, fmt=args.format, out=args.out, now=rt.clock(), cipher=rt.cipher(args.org), flt=flt
    )
    if result.reason == "staging_off":
        return fail(
            f"ft: {args.org} has fine-tuning staging off (its consent): nothing exported, nothing written",
            EXIT_FINDING,
        )
    if result.reason == "no_vault_key":
        return fail(f"ft: {result.card['error']}: nothing written", EXIT_USAGE)
    if result.reason == "pseudonyms_changed":
        return fail(f"ft: {result.card['error']}: nothing written, run it again", EXIT_FINDING)
    if result.reason == "masking_check_failed":
        where = ", ".join(f"{f['candidate_id']} ({'/'.join(f['labels'])})" for f in result.findings[:10])
        return fail(f"ft: masking check failed, nothing written: a value in clear in {where}", EXIT_FINDING)
    if not result.ok:
        skipped = ", ".join(f"{k} {v}" for k, v in result.card["skipped"].items() if v)
        return fail(f"ft: nothing to export from {args.org} ({skipped or 'no candidates'})", EXIT_FINDING)
    card = result.card
    print(f"wrote {card['count']} example(s) to {args.out} ({card['format']}), card {card_path(args.out)}")
    print("skipped: " + ", ".join(f"{k} {v}" for k, v in card["skipped"].items()))
    print(f"names pseudonymised: {card['pseudonymised']['people']} person(s)")
    print(f"sha256 {card['sha256']}  export {card['export_id']}")
    return EXIT_OK
