"""Compaction of a conversation's history (seed 001 §19): three levels, run in the background.

A conversation's *usage* is the estimated tokens of what a request of its turns carries — what
every request carries (``carried``: the system prompt, the tools, the context's sections), the
level-3 key points, the level-2 summary chunks and the raw messages still in the window (after
the cursor ``window_from``) — over the serving model's context window (``budget``; 200 000
tokens for Claude, 32 768 for the local stack's fakes; ``MemoryConfig.history_budget``, where
``history_token_budget`` replaces both by a fixed budget for the history alone). ``decide``
maps it onto the levels of §19.3:

==================  ============  ==========================================================
usage               level         what happens
==================  ============  ==========================================================
below 0.70          ``none``      nothing
0.70 up to 0.85     ``light``     the oldest raw messages beyond ``min_raw_messages`` become
                                  one level-2 chunk (a summary call, the fast model)
0.85 up to 0.95     ``aggressive`` the same, and the level-2 chunks already there are folded
                                  into the level-3 key points (a second summary call)
0.95 and more       ``emergency`` no LLM: the raw messages beyond ``min_raw_messages`` leave
                                  the window at once, then the oldest level-2 chunks, then the
                                  older half of level 3, until the usage is under 0.70
==================  ============  ==========================================================

Nothing leaves the window without its facts kept first (§19.7, ``memory.fact_memory``): before
the state is written, the decisions, commitments, preferences, dates, 「覚えておいて」 and tool
results of the departing messages, and every summary that departs (level-2 chunks folded into
level 3 or cut, the half of level 3 a cut drops), become memory chunks of the conversation's
person, each once. The rules are fixed (no LLM, so the emergency level keeps facts too); the
level-2 summary call lists the facts it read in the same answer (``summary_facts``), merged with
the rules' (``fact_merge``): no round trip is added at any level, and an answer whose list is not
the schema leaves the rules' facts as they are.

Personal values are sealed, never destroyed (``privacy.sealing``). With the vault's key (the
keeper's ``cipher``) compaction opens the sealed values of the messages and summaries it reads;
a summary call reads them as numbered placeholders (``summary_prompt``) and gets them back in its
answer; the summaries are written masked with their values sealed on the conversation document
(``sealed``: ``summary``, ``summary_levels/level3``, ``summary_levels/level2/N/summary``, the
whole map replaced with each write), and a kept fact seals its values in its chunk. Without a key
everything stays masked only, as before.

Nothing is deleted: a message that leaves the window stays in ``messages`` for the
organisation's retention (its ``expires_at``), findable by ``seq`` (an emergency cut records
the range it dropped in ``cuts``). The state is written on the conversation document in one
transaction that checks ``compaction_version``: the summary calls run outside it, and of two
compactions of one conversation that read the same version only the first writes; the other
finds the version moved and writes nothing (``conflict``).

It runs in the background ``memory`` target (``layers/memory.py``), never on the reply's path.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal

from cryptography.fernet import MultiFernet

from shared_lib.context.budget import estimate_tokens
from shared_lib.context.history import conversation_path, opened, window_cursor, window_messages
from shared_lib.context.memory_config import CompactionConfig
from shared_lib.context.summary_prompt import (
    Voice,
    summaries_text,
    summarise,
    summarise_with_facts,
    system_prompt,
    transcript,
)
from shared_lib.memory.fact_memory import Departing, Keeper, Kept, keep
from shared_lib.memory.fact_merge import Proposed
from shared_lib.ports import LLM, Doc, Store, Transaction
from shared_lib.privacy.sealing import SEALED_FIELD, seal, unseal

Level = Literal["none", "light", "aggressive", "emergency"]
CUTS_KEPT = 20
LEVEL3_LABEL = "これまでの要点: "


def decide(usage: float, config: CompactionConfig) -> Level:
    """The level of seed 001 §19.3 for ``usage`` (0.0 ..): thresholds are inclusive lower bounds."""
    if usage >= config.emergency_threshold:
        return "emergency"
    if usage >= config.aggressive_threshold:
        return "aggressive"
    if usage >= config.light_threshold:
        return "light"
    return "none"


@dataclass(frozen=True)
class Levels:
    """The compacted state of one conversation (the conversation document's fields)."""

    level3: str = ""
    level3_count: int = 0  # original messages behind level 3
    level2: tuple[
        dict[str, Any], ...
    ] = ()  # oldest first: summary, from_seq, to_seq, count, first_at, last_at
    window_from: str = ""
    version: int = 0
    cuts: tuple[dict[str, Any], ...] = ()

    @classmethod
    def of(cls, doc: dict[str, Any]) -> Levels:
        stored = doc.get("summary_levels") or {}
        return cls(
            level3=str(stored.get("level3") or ""),
            level3_count=int(stored.get("level3_count") or 0),
            level2=tuple(dict(c) for c in stored.get("level2") or ()),
            window_from=window_cursor(doc),
            version=int(doc.get("compaction_version") or 0),
            cuts=tuple(dict(c) for c in doc.get("cuts") or ()),
        )

    def summary(self) -> str:
        """What the context shows as 会話の要約: level 3, then each level-2 chunk, one per line."""
        head = [LEVEL3_LABEL + self.level3] if self.level3 else []
        return "\n".join([*head, *(str(c.get("summary") or "") for c in self.level2)])

    def tokens(self) -> int:
        return estimate_tokens(self.summary())

    def fields(self, *, level: Level, usage: float, now: datetime) -> dict[str, Any]:
        """The conversation document's fields for this state (written with ``merge``)."""
        return {
            "summary": self.summary(),
            "summary_levels": {
                "level3": self.level3,
                "level3_count": self.level3_count,
                "level2": [dict(c) for c in self.level2],
            },
            "window_from": self.window_from,
            "compaction_version": self.version + 1,
            "cuts": [dict(c) for c in self.cuts][-CUTS_KEPT:],
            "compaction": {"level": level, "usage": round(usage, 4), "at": now},
        }


def usage_of(levels: Levels, raw: list[dict[str, Any]], budget: int, carried: int = 0) -> float:
    """The share of the window (``budget``) what is always carried, the summary levels and the
    raw window take."""
    history = levels.tokens() + sum(estimate_tokens(str(m.get("text") or "")) for m in raw)
    return (carried + history) / budget


@dataclass(frozen=True)
class Compactor:
    """What a compaction needs: the thresholds, the window and what is always carried in it, the
    LLM and its model, the voice, and how facts are kept (``None``: they are not)."""

    config: CompactionConfig
    budget: int
    llm: LLM | None
    model: str
    voice: Voice | None = None
    carried: int = 0
    keeper: Keeper | None = None

    def usage(self, levels: Levels, raw: list[dict[str, Any]]) -> float:
        return usage_of(levels, raw, self.budget, self.carried)

    @property
    def cipher(self) -> MultiFernet | None:
        """The vault's key the summaries and facts are sealed with (``None``: masked only)."""
        return self.keeper.cipher if self.keeper is not None else None


@dataclass(frozen=True)
class Compaction:
    """What one run did: the level it decided, the usage before and after, and whether it wrote."""

    level: Level
    usage: float
    after: float
    written: bool
    # written, below_threshold, nothing_to_do, conflict, disabled, no_conversation, no_llm, no_key
    reason: str
    calls: int = 0
    detail: dict[str, Any] = field(default_factory=dict)


def pending_level(store: Store, org_id: str, conversation_key: str, c: Compactor) -> Level:
    """The level the conversation's usage asks for now (two reads: the document and the window),
    so a caller pays for the persona and the session only when there is work."""
    doc = store.get(conversation_path(org_id, conversation_key))
    if doc is None or not c.config.enabled:
        return "none"
    levels = Levels.of(doc)
    raw = window_messages(store, org_id, conversation_key, after=levels.window_from)
    return decide(c.usage(levels, [d for _, d in raw]), c.config)


def compact(store: Store, org_id: str, conversation_key: str, c: Compactor, *, now: datetime) -> Compaction:
    """Compact one conversation if its usage asks for it (idempotent: a second run finds it done)."""
    if not c.config.enabled:
        return Compaction("none", 0.0, 0.0, False, "disabled")
    path = conversation_path(org_id, conversation_key)
    doc = store.get(path)
    if doc is None:
        return Compaction("none", 0.0, 0.0, False, "no_conversation")
    levels = Levels.of(unseal(doc, c.cipher)[0])  # the values in clear, sealed again when written
    stored = window_messages(store, org_id, conversation_key, after=levels.window_from)
    if c.cipher is None and any(d.get(SEALED_FIELD) for d in [doc, *(m for _, m in stored)]):
        # without the key its summaries would keep placeholders for values that are sealed (and a
        # merge would leave the old seals on new text): a process holding the key does it
        return Compaction("none", 0.0, 0.0, False, "no_key")
    raw = list(zip([i for i, _ in stored], opened([d for _, d in stored], c.cipher), strict=True))
    usage = c.usage(levels, [d for _, d in raw])
    level = decide(usage, c.config)
    if level == "none":
        return Compaction(level, usage, usage, False, "below_threshold")
    proposed: tuple[Proposed, ...] = ()  # what the summary call read as facts (an emergency has none)
    if level == "emergency":
        new, calls = cut(levels, raw, c, now=now), 0
    elif c.llm is None:
        return Compaction(level, usage, usage, False, "no_llm")
    else:
        new, calls, proposed = _summarised(levels, raw, c, aggressive=level == "aggressive")
    if new == levels:
        return Compaction(level, usage, usage, False, "nothing_to_do", calls)
    after = c.usage(new, [d for _, d in raw if str(d.get("seq") or "") > new.window_from])
    leaving = replace(departing(levels, new, raw), proposed=proposed)
    kept = _keep_facts(store, org_id, conversation_key, doc, leaving, c, now=now)
    fields = new.fields(level=level, usage=usage, now=now)
    written = store.run_transaction(lambda txn: _write(txn, path, levels.version, fields, c.cipher))
    detail = {
        "window_from": new.window_from,
        "level2": len(new.level2),
        "version": levels.version + 1,
        "facts_written": kept.written,
        "facts_existing": kept.existing,
        "facts_proposed": len(proposed),
    }
    return Compaction(level, usage, after, written, "written" if written else "conflict", calls, detail)


def departing(old: Levels, new: Levels, raw: list[tuple[str, dict[str, Any]]]) -> Departing:
    """What leaves the window between ``old`` and ``new``: the raw messages up to the new cursor,
    the level-2 chunks no longer there, and level 3 when a cut halved it."""
    messages = [d for _, d in raw if str(d.get("seq") or "") <= new.window_from] if new.window_from else []
    staying = {(ch.get("from_seq"), ch.get("to_seq")) for ch in new.level2}
    chunks = [ch for ch in old.level2 if (ch.get("from_seq"), ch.get("to_seq")) not in staying]
    if old.level3 and new.level3 != old.level3 and new.level3.startswith("…"):
        chunks.insert(0, {"summary": old.level3})
    return Departing(messages, chunks)


def _keep_facts(
    store: Store,
    org_id: str,
    conversation_key: str,
    doc: dict[str, Any],
    leaving: Departing,
    c: Compactor,
    *,
    now: datetime,
) -> Kept:
    if c.keeper is None or not c.config.auto_save_to_memory or not leaving:
        return Kept()
    user = str(doc.get("user_id") or "")
    return keep(store, org_id, conversation_key, user, leaving, c.keeper, now=now)


def _write(
    txn: Transaction, path: str, version: int, fields: dict[str, Any], cipher: MultiFernet | None
) -> bool:
    current = txn.get(path) or {}
    if int(current.get("compaction_version") or 0) != version:
        return False  # another compaction wrote since this one read: its state stands
    if cipher is None:
        txn.set(path, fields, merge=True)  # the summaries masked only, as the calls gave them
        return True
    # the whole document: a merge would keep the sealed entries of summaries no longer there
    body = {k: v for k, v in current.items() if k != SEALED_FIELD}
    txn.set(path, {**body, **sealed_summaries(fields, cipher)})
    return True


def sealed_summaries(fields: dict[str, Any], cipher: MultiFernet | None) -> Doc:
    """``fields`` with their summaries masked and the values they held sealed (``sealed``, on the
    paths of the conversation document); only the summaries' texts are read for values."""
    levels = fields["summary_levels"]
    texts = {
        "summary": fields["summary"],
        "summary_levels": {
            "level3": levels["level3"],
            "level2": [{"summary": str(c.get("summary") or "")} for c in levels["level2"]],
        },
    }
    done = seal(texts, cipher)
    level2 = [
        {**c, "summary": m["summary"]}
        for c, m in zip(levels["level2"], done["summary_levels"]["level2"], strict=True)
    ]
    out: Doc = {
        **fields,
        "summary": done["summary"],
        "summary_levels": {**levels, "level3": done["summary_levels"]["level3"], "level2": level2},
    }
    if done.get(SEALED_FIELD):
        out[SEALED_FIELD] = done[SEALED_FIELD]
    return out


def _chunk(summary: str, messages: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    first, last = messages[0][1], messages[-1][1]
    return {
        "summary": summary,
        "from_seq": str(first.get("seq") or ""),
        "to_seq": str(last.get("seq") or ""),
        "count": len(messages),
        "first_at": first.get("at"),
        "last_at": last.get("at"),
    }


def _summarised(
    levels: Levels, raw: list[tuple[str, dict[str, Any]]], c: Compactor, *, aggressive: bool
) -> tuple[Levels, int, tuple[Proposed, ...]]:
    """Light: the oldest raw messages beyond the minimum become a level-2 chunk (its call lists
    their facts too). Aggressive: also fold the level-2 chunks already there into level 3."""
    assert c.llm is not None
    cfg, calls, new = c.config, 0, levels
    sealing = c.cipher is not None  # the calls read numbered placeholders and give the values back
    if aggressive and levels.level2:
        vault: dict[str, str] | None = {} if sealing else None
        text = summaries_text(levels.level3, [str(ch.get("summary") or "") for ch in levels.level2], vault)
        level3 = summarise(
            c.llm,
            model=c.model,
            system=system_prompt(c.voice if cfg.use_persona_prompt else None, "level3"),
            text=text,
            max_tokens=cfg.summary_max_tokens,
            limit=cfg.level3_max_chars,
            vault=vault,
        )
        calls += 1
        covered = levels.level3_count + sum(int(ch.get("count") or 0) for ch in levels.level2)
        new = replace(new, level3=level3, level3_count=covered, level2=())
    oldest = raw[: max(len(raw) - cfg.min_raw_messages, 0)]
    proposed: tuple[Proposed, ...] | None = None
    if oldest:
        numbered: dict[str, str] | None = {} if sealing else None
        summary, proposed = summarise_with_facts(
            c.llm,
            model=c.model,
            system=system_prompt(c.voice if cfg.use_persona_prompt else None, "level2"),
            text=transcript([d for _, d in oldest], numbered),
            max_tokens=cfg.summary_max_tokens,
            limit=cfg.level2_max_chars,
            vault=numbered,
        )
        calls += 1
        window_from = str(oldest[-1][1].get("seq") or "")
        new = replace(new, level2=(*new.level2, _chunk(summary, oldest)), window_from=window_from)
    return new, calls, proposed or ()


def cut(levels: Levels, raw: list[tuple[str, dict[str, Any]]], c: Compactor, *, now: datetime) -> Levels:
    """The emergency cut, deterministic and without an LLM: raw messages beyond the minimum leave
    the window, then the oldest level-2 chunks, then the older half of level 3, until the usage
    is under the light threshold. The messages stay stored; the cut records their range."""
    cfg = c.config
    dropped = raw[: max(len(raw) - cfg.min_raw_messages, 0)]
    kept = [d for _, d in raw[len(dropped) :]]
    new = levels
    record: dict[str, Any] = {"at": now, "count": len(dropped), "chunks_dropped": 0, "level3_cut": False}
    if dropped:
        record |= {
            "from_seq": str(dropped[0][1].get("seq") or ""),
            "to_seq": str(dropped[-1][1].get("seq") or ""),
        }
        new = replace(new, window_from=record["to_seq"])
    chunks = list(new.level2)
    while chunks and c.usage(replace(new, level2=tuple(chunks)), kept) >= cfg.light_threshold:
        chunks.pop(0)
        record["chunks_dropped"] += 1
    new = replace(new, level2=tuple(chunks))
    if new.level3 and c.usage(new, kept) >= cfg.light_threshold:
        half = new.level3[len(new.level3) // 2 :]
        new = replace(new, level3="…" + half.lstrip())
        record["level3_cut"] = True
    if new == levels:
        return levels
    return replace(new, cuts=(*levels.cuts, record))
