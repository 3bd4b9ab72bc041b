"""The soak's books: every webhook it sent, every planned turn's fate, and the ok rule.

Pure: the run (``infra.soak.run``) records what happened and ``books`` adds it up. What the
run records, per source:

* the soak's side: each send attempt's outcome (``Attempt``), counted as it was made;
* the ingress's side: the turn its dedupe record names for each planned event, read at the
  end (``TurnRecord.ingress_turn_id``), which resolves an attempt that timed out but was
  taken (its retry is then answered as a duplicate, naming no turn);
* the fake channel server: every reply (``Reply``: the turn it names, its key and room);
* the stores: effects per turn tag, dead letters per turn, and the kills (``KillRecord``:
  the turns whose layer claim the kill interrupted).

A planned turn's fate is one of ``FATES``:

* ``answered``: one turn at the ingress, replies under one Idempotency-Key (the same key
  again is a resend, which the receiver drops by its key);
* ``duplicated``: the ingress made two turns of the event, or replies came under two keys;
* ``lost``: taken (or answered as a duplicate) but never answered, or answered as a
  duplicate of an event the ingress has no record of;
* ``unaccepted``: never taken (every attempt refused or unanswered, nothing at the ingress);
* ``dead_lettered``: the plan poisoned it and it was dead-lettered (its only right end).

``reconcile`` checks that the counts add up to what was sent, and ``verdict`` is the ok rule:
any of its failures makes the run not ok.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

# one send attempt's outcome
ACCEPTED = "accepted"  # 2xx naming a new turn
DEDUPLICATED = "deduplicated"  # 2xx naming none: the ingress had the event already
REFUSED = "refused"  # an answer other than 2xx (its status is kept)
TIMED_OUT = "timed_out"  # no answer in time: the ingress may have taken it or not
UNREACHABLE = "unreachable"  # no connection, or it broke before an answer
OUTCOMES = (ACCEPTED, DEDUPLICATED, REFUSED, TIMED_OUT, UNREACHABLE)

FATES = ("answered", "duplicated", "lost", "unaccepted", "dead_lettered")
# how the first delivery of a planned event ended (its provider retries included)
RESOLUTIONS = ("accepted", "taken_on_timeout", "unresolved", "never_taken")


@dataclass(frozen=True)
class Attempt:
    outcome: str
    redelivery: bool = False  # the plan's second delivery of the event, not a provider retry
    status: int | None = None
    turn_ids: tuple[str, ...] = ()
    at: float = 0.0


@dataclass(frozen=True)
class Reply:
    """One reply the fake channel server received (its first part)."""

    turn_id: str  # the turn it names
    key: str  # its Idempotency-Key
    room: str
    text: str
    at: float


@dataclass
class TurnRecord:
    index: int
    tag: str
    room: str
    effect: str | None = None  # the effect the plan expects exactly once ("task", "memory")
    fault: str | None = None
    must_degrade: bool = False
    poisoned: bool = False  # the plan poisons it: it must be dead-lettered
    attempts: list[Attempt] = field(default_factory=list)
    ingress_turn_id: str | None = None  # what the ingress's dedupe record names, read at the end

    @property
    def accepted_at(self) -> float | None:
        """When the soak first knew the ingress had the event (a 2xx, accepted or deduplicated)."""
        ok = [a.at for a in self.attempts if a.outcome in (ACCEPTED, DEDUPLICATED)]
        return min(ok) if ok else None

    def turn_ids(self) -> list[str]:
        """Every turn the ingress made of this event: its record's, then any other a 2xx named."""
        ids = [self.ingress_turn_id] if self.ingress_turn_id else []
        for attempt in self.attempts:
            ids.extend(t for t in attempt.turn_ids if t not in ids)
        return ids

    def resolution(self) -> str:
        outcomes = [a.outcome for a in self.attempts if not a.redelivery]
        if ACCEPTED in outcomes:
            return "accepted"
        if self.ingress_turn_id:
            # an attempt was taken although its answer never came (its retry was answered as a
            # duplicate, or none got through): the ingress's record names the turn
            return "taken_on_timeout"
        return "unresolved" if DEDUPLICATED in outcomes else "never_taken"


@dataclass(frozen=True)
class KillRecord:
    layer: str
    at: float
    hit: tuple[str, ...] = ()  # turns whose claim for this layer the kill interrupted (held, then dead)
    waited_seconds: float = 0.0  # how long the kill waited for a claim to be held
    restart_seconds: float | None = None
    error: str | None = None
    workers: tuple[int, ...] = ()
    follow_up: bool = False  # made because the kills before it hit nothing in flight


@dataclass(frozen=True)
class Observed:
    """Everything a run saw, in the form ``books`` adds up."""

    turns: list[TurnRecord]
    replies: list[Reply]
    sent: int  # webhook deliveries the soak made, counted as it made them
    received_replies: int  # first parts the fake channel server recorded, counted as they were read
    effects: Mapping[str, Mapping[str, int]]  # kind ("task", "memory") -> turn tag -> how many
    dead_letters: Mapping[str, int]  # turn id -> dead-letter records
    degraded_texts: frozenset[str]
    kills: list[KillRecord] = field(default_factory=list)
    started: float = 0.0


def _fate(turn: TurnRecord, replies: list[Reply], dead: bool) -> str:
    ids = turn.turn_ids()
    if turn.poisoned and dead:
        return "dead_lettered"
    if not ids:
        return "lost" if turn.resolution() == "unresolved" else "unaccepted"
    if len(ids) > 1 or len({r.key for r in replies}) > 1:
        return "duplicated"
    return "answered" if replies else "lost"


def books(obs: Observed, *, rolled_back: str | None = None) -> dict[str, Any]:
    """The report: webhooks, fates, replies, effects, dead letters, outages and kills.

    ``rolled_back``: why the LLM arm was rolled back during the run (the plan's expected
    answers assume it serves every turn)."""
    owner: dict[str, TurnRecord] = {}
    claimed_twice: set[str] = set()
    for turn in obs.turns:
        for tid in turn.turn_ids():
            if tid in owner and owner[tid] is not turn:
                claimed_twice.add(tid)
            owner[tid] = turn
    mine: dict[int, list[Reply]] = {t.index: [] for t in obs.turns}
    foreign: list[Reply] = []
    for reply in obs.replies:
        answered = owner.get(reply.turn_id)
        if answered is None or answered.room != reply.room:  # no message we sent, or another conversation's
            foreign.append(reply)
        else:
            mine[answered.index].append(reply)
    dead = {t.index: sum(obs.dead_letters.get(i, 0) for i in t.turn_ids()) for t in obs.turns}
    fates = {t.index: _fate(t, mine[t.index], dead[t.index] > 0) for t in obs.turns}
    first_reply = {i: min((r.at for r in rs), default=None) for i, rs in mine.items()}
    attempts = [a for t in obs.turns for a in t.attempts]
    refused = Counter(str(a.status) for a in attempts if a.outcome == REFUSED)

    def degraded(index: int) -> bool:
        rs = sorted(mine[index], key=lambda r: r.at)
        return bool(rs) and rs[0].text in obs.degraded_texts

    effects = _effects(obs, mine)
    kills = [_kill(k, first_reply, owner, obs.started) for k in obs.kills]
    recoveries = [k["recovery_seconds"] for k in kills if k["recovery_seconds"] is not None]
    outages = [
        {
            "turn": t.index,
            "fault": t.fault,
            "must_degrade": t.must_degrade,
            "degraded": degraded(t.index),
            "turn_ids": t.turn_ids(),
            "reply": min(mine[t.index], key=lambda r: r.at).text[:80] if mine[t.index] else None,
        }
        for t in obs.turns
        if t.fault in ("failover", "outage")
    ]
    latencies = sorted(
        first_reply[t.index] - t.accepted_at  # type: ignore[operator]
        for t in obs.turns
        if first_reply[t.index] is not None and t.accepted_at is not None
    )
    expected_dead = {i for t in obs.turns if t.poisoned for i in t.turn_ids()}
    report: dict[str, Any] = {
        "turns": len(obs.turns),
        "webhooks": {
            "sent": obs.sent,
            "attempts": len(attempts),
            "redeliveries": sum(1 for a in attempts if a.redelivery),
            **{o: sum(1 for a in attempts if a.outcome == o) for o in OUTCOMES},
            "refused_by_status": dict(refused),
        },
        "resolutions": dict(Counter(t.resolution() for t in obs.turns)),
        "fates": {f: sum(1 for v in fates.values() if v == f) for f in FATES},
        "accepted": sum(1 for t in obs.turns if t.turn_ids()),
        "answered": sum(1 for i in first_reply.values() if i is not None),
        "lost": sum(1 for v in fates.values() if v == "lost"),
        "lost_turns": [
            {"turn": t.index, "turn_ids": t.turn_ids(), "resolution": t.resolution()}
            for t in obs.turns
            if fates[t.index] == "lost"
        ][:20],
        "unaccepted": sum(1 for v in fates.values() if v == "unaccepted"),
        "replies": {"received": obs.received_replies, "ours": sum(len(r) for r in mine.values())},
        # a turn the ingress made twice of one event (a redelivery taken as new)
        "duplicate_turns": sum(max(0, len(t.turn_ids()) - 1) for t in obs.turns),
        # a reply under a key of its own: a receiver that dedupes by Idempotency-Key shows it too
        "duplicate_replies": sum(max(0, len({r.key for r in rs}) - 1) for rs in mine.values()),
        # the same reply again under the same key (a responder killed between its send and its
        # receipt): the plain-HTTP contract has the receiver drop it by the key
        "resent_replies": sum(len(rs) - len({r.key for r in rs}) for rs in mine.values()),
        "repeated_reply_turns": [
            {"turn": i, "keys": [r.key for r in rs], "texts": [r.text[:60] for r in rs]}
            for i, rs in mine.items()
            if len(rs) > 1
        ][:20],
        "foreign_replies": len(foreign),
        "foreign_reply_samples": [
            {"turn_id": r.turn_id, "room": r.room, "text": r.text[:60]} for r in foreign
        ][:10],
        **effects,
        "dead_letters": sum(dead.values()),
        "expected_dead_letters": len(expected_dead),
        "unexpected_dead_letters": sorted(
            i for i, n in obs.dead_letters.items() if n and i not in expected_dead
        )[:20],
        "degraded_replies": sum(1 for t in obs.turns if degraded(t.index)),
        # degraded although the plan did not fail every peer (a spent turn budget, a crash): when
        # the soak's clock saw it taken and answered
        "unplanned_degraded": [
            {
                "turn": t.index,
                "turn_ids": t.turn_ids(),
                "reply": min(mine[t.index], key=lambda r: r.at).text[:40],
                "taken_at_seconds": round(t.accepted_at - obs.started, 1) if t.accepted_at else None,
                "answered_at_seconds": round(first_reply[t.index] - obs.started, 1),  # type: ignore[operator]
            }
            for t in obs.turns
            if degraded(t.index) and not t.must_degrade
        ][:20],
        "outages": outages,
        "llm_faults": dict(Counter(t.fault for t in obs.turns if t.fault)),
        "kills": len(kills),
        "kills_in_flight": sum(1 for k in kills if k["in_flight"]),
        "kill_errors": sum(1 for k in kills if k["error"]),
        "recovery_seconds": {
            "max": max(recoveries, default=None),
            "median": statistics.median(recoveries) if recoveries else None,
        },
        "restart_seconds_max": max((k["restart_seconds"] or 0 for k in kills), default=None),
        "latency_seconds": _quantiles(latencies),
        "kill_log": kills,
    }
    report["rolled_back"] = rolled_back
    report["claimed_by_two_turns"] = sorted(claimed_twice)
    report["reconciliation"] = reconcile(report, obs.turns)
    report["failures"] = verdict(report)
    report["ok"] = not report["failures"]
    return report


def _effects(obs: Observed, replies: Mapping[int, list[Reply]]) -> dict[str, Any]:
    missing, duplicate, unexpected = [], 0, []
    for t in obs.turns:
        for kind, found in obs.effects.items():
            n = found.get(t.tag, 0)
            want = 1 if t.effect == kind else 0
            if want and not n:
                said = min(replies.get(t.index, []), key=lambda r: r.at, default=None)
                missing.append(
                    {
                        "turn": t.index,
                        "effect": kind,
                        "turn_ids": t.turn_ids(),
                        "reply": said.text[:80] if said else None,
                    }
                )
            duplicate += max(0, n - 1)
            if not want and n:
                unexpected.append({"turn": t.index, "effect": kind, "found": n})
    return {
        "effect_turns": sum(1 for t in obs.turns if t.effect),
        "effects": {kind: sum(found.values()) for kind, found in obs.effects.items()},
        "missing_effects": missing[:20],
        "missing_effect_count": len(missing),
        "duplicate_effects": duplicate,
        "unexpected_effects": unexpected[:20],
        "unexpected_effect_count": len(unexpected),
    }


def _kill(
    k: KillRecord, first_reply: Mapping[int, float | None], owner: Mapping[str, TurnRecord], started: float
) -> dict[str, Any]:
    """A kill's line; recovery only when it interrupted a turn: until every such turn is answered."""
    ends = [first_reply.get(owner[t].index) if t in owner else None for t in k.hit]
    recovered = None
    if k.hit and all(e is not None for e in ends):
        recovered = round(max(e for e in ends if e is not None) - k.at, 2)
    return {
        "layer": k.layer,
        "at_seconds": round(k.at - started, 2),
        "in_flight": bool(k.hit),
        "follow_up": k.follow_up,
        "turns_hit": [owner[t].index if t in owner else t for t in k.hit],
        "waited_seconds": round(k.waited_seconds, 2),
        "workers": list(k.workers),
        "restart_seconds": k.restart_seconds,
        "recovery_seconds": recovered,
        "error": k.error,
    }


def reconcile(report: Mapping[str, Any], turns: Iterable[TurnRecord]) -> list[str]:
    """Where the counts do not add up to what was sent (empty: they do)."""
    turns = list(turns)
    wrong = []
    hooks = report["webhooks"]
    by_outcome = sum(hooks[o] for o in OUTCOMES)
    if not hooks["sent"] == hooks["attempts"] == by_outcome:
        wrong.append(
            f"webhooks: {hooks['sent']} sent, {hooks['attempts']} attempts recorded, {by_outcome} by outcome"
        )
    fates = sum(report["fates"].values())
    if fates != report["turns"]:
        wrong.append(f"turns: {report['turns']} planned, {fates} with a fate")
    if sum(report["resolutions"].values()) != report["turns"]:
        wrong.append(f"turns: {report['turns']} planned, {sum(report['resolutions'].values())} resolved")
    # one new turn per accepted delivery, no turn shared by two planned events, and every other
    # turn the ingress made is the one of an attempt taken on a timeout
    named = {t for turn in turns for a in turn.attempts if a.outcome == ACCEPTED for t in a.turn_ids}
    if len(named) != hooks[ACCEPTED]:
        wrong.append(f"{len(named)} turns named by {hooks[ACCEPTED]} accepted deliveries")
    if report["claimed_by_two_turns"]:
        wrong.append(f"turns named by two planned events: {report['claimed_by_two_turns']}")
    unnamed = sum(1 for t in turns if t.ingress_turn_id and t.ingress_turn_id not in named)
    if unnamed != report["resolutions"].get("taken_on_timeout", 0):
        wrong.append(
            f"{unnamed} turns at the ingress no answer named, "
            f"{report['resolutions'].get('taken_on_timeout', 0)} taken on a timeout"
        )
    replies = report["replies"]
    if replies["received"] != replies["ours"] + report["foreign_replies"]:
        wrong.append(
            f"replies: {replies['received']} received, {replies['ours']} ours + {report['foreign_replies']} foreign"
        )
    return wrong


def verdict(report: Mapping[str, Any]) -> list[str]:
    """The ok rule: why the run is not ok (empty: it is)."""
    failures = [f"counts do not reconcile: {w}" for w in report["reconciliation"]]
    if report.get("rolled_back"):
        failures.append(f"the LLM arm was rolled back during the run ({report['rolled_back']})")
    zero = (
        "lost",
        "unaccepted",
        "duplicate_turns",
        "duplicate_replies",
        "duplicate_effects",
        "missing_effect_count",
        "unexpected_effect_count",
        "foreign_replies",
        "kill_errors",
    )
    failures += [f"{key}: {report[key]}" for key in zero if report[key]]
    if report["unexpected_dead_letters"]:
        failures.append(f"dead letters the plan did not poison: {report['unexpected_dead_letters']}")
    if report["fates"]["dead_lettered"] != report["expected_dead_letters"]:
        failures.append(
            f"{report['expected_dead_letters']} poisoned turns, {report['fates']['dead_lettered']} dead-lettered"
        )
    undegraded = [o["turn"] for o in report["outages"] if o["must_degrade"] and not o["degraded"]]
    if undegraded:
        failures.append(f"outages of every peer answered without the degraded reply: turns {undegraded}")
    if report["kills"] and not report["kills_in_flight"]:
        failures.append(
            f"none of the {report['kills']} kills hit a turn in flight: the crashes tested nothing"
        )
    return failures


def _quantiles(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "p95": None, "max": None}

    def pick(q: float) -> float:
        return round(values[min(len(values) - 1, int(q * len(values)))], 2)

    return {"p50": pick(0.5), "p95": pick(0.95), "max": round(values[-1], 2)}
