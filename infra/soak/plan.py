"""What a soak sends: the turns (seeded), their LLM faults as a fake Anthropic scenario.

Every turn carries a unique tag (``S0042``) in its text, so the effects it causes (a ChatWork
task body, a memory) can be counted per turn. A turn chosen for an LLM fault also carries a
fault marker (``#F0042``) that one rule of the fake server's scenario matches; every fault is
bounded (``times``), so a marker that lingers in a later prompt (history) cannot fault it for
ever, and a faulted turn gets a room of its own. Fault kinds, in the order of
``FAULT_KINDS``: overloaded twice (retried), one 500 (retried), one stall longer than the
local stack's LLM timeout (retried within the turn's budget), one stream cut (retried), and
an outage longer than the turn's every attempt (the persona's degraded reply).
"""

from __future__ import annotations

import json
import random
import uuid
from dataclasses import dataclass
from typing import Any

USERS = ("u-suzuki", "u-yamada", "u-sato1", "u-kazu")
KINDS = ("smalltalk", "task", "memory", "search")
FAULT_KINDS = ("overloaded", "error", "stall", "cut", "outage")


@dataclass(frozen=True)
class PlannedTurn:
    index: int
    tag: str
    room: str
    user: str
    kind: str
    text: str
    fault: str | None
    redeliver: bool
    event_id: str

    @property
    def marker(self) -> str:
        return f"#F{self.index:04d}"

    @property
    def effect(self) -> str | None:
        """The effect this turn asks for: a ChatWork task or a memory (``None``: none)."""
        return {"task": "task", "memory": "memory"}.get(self.kind)


def _text(kind: str, tag: str) -> str:
    if kind == "task":
        return f"田中さんに明日までに{tag}の見積書を作成するタスクをお願い"
    if kind == "memory":
        return f"覚えて: {tag}の打ち合わせはオンラインが好み"
    if kind == "search":
        return f"私のタスクを教えて（{tag}）"
    return f"{tag} 今日は暑いね"


def plan(
    turns: int,
    *,
    llm_fault_rate: float,
    redelivery_rate: float,
    seed: int,
    conversations: int | None = None,
) -> list[PlannedTurn]:
    """``turns`` turns over ``conversations`` rooms (default: one per three turns), seeded."""
    rng = random.Random(seed)
    run = f"{seed:x}-{uuid.uuid4().hex[:6]}"
    rooms = max(1, conversations or turns // 3)
    out = []
    for i in range(turns):
        tag = f"S{i:04d}x{run[-4:]}"
        faulted = rng.random() < llm_fault_rate
        # a faulted turn is small talk or a task (never a memory: its marker would stay in later prompts)
        kind = rng.choice(("smalltalk", "task")) if faulted else rng.choice(KINDS)
        fault = rng.choice(FAULT_KINDS) if faulted else None
        conversation = f"soak-{run}-f{i}" if faulted else f"soak-{run}-c{i % rooms}"
        text = _text(kind, tag) + (f" #F{i:04d}" if faulted else "")
        out.append(
            PlannedTurn(
                index=i,
                tag=tag,
                room=conversation,
                user=USERS[(i % rooms) % len(USERS)],
                kind=kind,
                text=text,
                fault=fault,
                redeliver=rng.random() < redelivery_rate,
                event_id=f"soak-{run}-{i}",
            )
        )
    return out


def _fault(kind: str) -> dict[str, Any]:
    return {
        "overloaded": {"kind": "status", "status": 529, "times": 2},
        "error": {"kind": "status", "status": 500, "times": 1},
        "stall": {"kind": "delay", "seconds": 25, "times": 1},
        "cut": {"kind": "cut_stream", "after_blocks": 0, "times": 1},
        # more failures than all of the turn's calls can make: proposal (twice) and phrasing, 4 attempts each
        "outage": {"kind": "status", "status": 500, "times": 12},
    }[kind]


def scenario(turns: list[PlannedTurn]) -> str:
    """The fake Anthropic server's scenario (JSON) injecting each faulted turn's fault."""
    rules = [
        {
            "name": f"soak fault {t.fault} for turn {t.index}",
            "match": {"last_user_regex": f"{t.marker}(?![0-9])"},
            "fault": _fault(str(t.fault)),
        }
        for t in turns
        if t.fault
    ]
    return json.dumps({"name": "soak", "description": "per-turn LLM faults of a soak run", "rules": rules})
