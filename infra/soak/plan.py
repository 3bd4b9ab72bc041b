"""What a soak sends: the turns (seeded), their LLM faults as fake-LLM scenarios.

Every turn carries a unique tag (``S0042``) in its text, so the effects it causes (a ChatWork
task body, a memory) can be counted per turn. A turn chosen for an LLM fault also carries a
fault marker (``#F0042``) that one rule of the fakes' scenarios matches; every fault is
bounded (``times``), so a marker that lingers in a later prompt (history) cannot fault it for
ever, and a faulted turn gets a room of its own.

Fault kinds (``FAULT_KINDS``, dealt to the faulted turns in a seeded rotation so that every
kind appears once there are as many faulted turns as kinds):

* retried on the first peer: overloaded twice, one 500, one stall longer than the local
  stack's LLM timeout, one stream cut;
* ``failover``: the first peer (the fake Anthropic API) is down for the whole turn; the next
  peer answers, so the reply is a normal one;
* ``outage``: every configured peer (``PEERS``: the fake Anthropic API, the fallback fake
  serving the Vertex routes, the fake OpenAI-compatible server) is down for the whole turn:
  the reply must be the persona's degraded one (``PlannedTurn.must_degrade``) and the turn
  has no effect.
"""

from __future__ import annotations

import json
import random
import uuid
from dataclasses import dataclass
from typing import Any

# the layers a poisoned turn fails in (``[[fail:LAYER]]``, the stack's fault injection)
POISON_LAYERS = ("guardian", "authorizer", "executor")
USERS = ("u-suzuki", "u-yamada", "u-sato1", "u-kazu")
KINDS = ("smalltalk", "task", "memory", "search")
FAULT_KINDS = ("overloaded", "error", "stall", "cut", "failover", "outage")
# the local stack's LLM peers in routing order, as its components are named (infra.local_stack)
PEERS = ("fake_llm", "fake_llm_fallback", "fake_openai")
# more failures than every call of a turn can make on one peer: the router's classifier, the
# proposal (twice) and the phrasing, four attempts each, and a shadow brain's calls on top
DOWN_FOR_A_TURN = 40


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
    poison: str | None = None  # a layer made to fail this turn every time: it must be dead-lettered

    @property
    def marker(self) -> str:
        return f"#F{self.index:04d}"

    @property
    def must_degrade(self) -> bool:
        """Every peer is down for this turn: only the persona's degraded reply is right."""
        return self.fault == "outage"

    @property
    def fault_peers(self) -> tuple[str, ...]:
        """The peers (stack components) this turn's fault hits."""
        if self.fault is None:
            return ()
        return PEERS if self.fault == "outage" else PEERS[:1]

    @property
    def effect(self) -> str | None:
        """The effect this turn must cause exactly once: a ChatWork task or a memory (``None``: none)."""
        if self.must_degrade or self.poison:
            return None
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
    poison_rate: float = 0.0,
) -> list[PlannedTurn]:
    """``turns`` turns over ``conversations`` rooms (default: one per three turns), seeded.

    A share ``poison_rate`` of the turns (drawn apart from the others, so the rest of the plan
    is the same with or without) is poisoned: small talk failing in one layer every time, in a
    room of its own (a dead letter holds its conversation back until it has left the queue)."""
    poisoner = random.Random(f"{seed}-poison")
    rng = random.Random(seed)
    run = f"{seed:x}-{uuid.uuid4().hex[:6]}"
    rooms = max(1, conversations or turns // 3)
    rotation = rng.randrange(len(FAULT_KINDS))
    out = []
    for i in range(turns):
        tag = f"S{i:04d}x{run[-4:]}"
        faulted = rng.random() < llm_fault_rate
        # a faulted turn is small talk or a task (never a memory: its marker would stay in later prompts)
        kind = rng.choice(("smalltalk", "task")) if faulted else rng.choice(KINDS)
        fault = None
        if faulted:
            fault, rotation = FAULT_KINDS[rotation % len(FAULT_KINDS)], rotation + 1
        poison = poisoner.choice(POISON_LAYERS) if poisoner.random() < poison_rate and not faulted else None
        if poison:
            kind = "smalltalk"
        conversation = f"soak-{run}-f{i}" if faulted or poison else f"soak-{run}-c{i % rooms}"
        text = _text(kind, tag) + (f" #F{i:04d}" if faulted else "")
        if poison:
            text = f"[[fail:{poison}]] {text}"
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
                poison=poison,
            )
        )
    return out


def _fault(kind: str) -> dict[str, Any]:
    return {
        "overloaded": {"kind": "status", "status": 529, "times": 2},
        "error": {"kind": "status", "status": 500, "times": 1},
        "stall": {"kind": "delay", "seconds": 25, "times": 1},
        "cut": {"kind": "cut_stream", "after_blocks": 0, "times": 1},
        "failover": {"kind": "status", "status": 500, "times": DOWN_FOR_A_TURN},
        "outage": {"kind": "status", "status": 500, "times": DOWN_FOR_A_TURN},
    }[kind]


def scenario(turns: list[PlannedTurn], peer: str = PEERS[0]) -> str:
    """The scenario (JSON) of the fake LLM ``peer``: the faults of the turns that hit it."""
    rules = [
        {
            "name": f"soak fault {t.fault} for turn {t.index}",
            "match": {"last_user_regex": f"{t.marker}(?![0-9])"},
            "fault": _fault(str(t.fault)),
        }
        for t in turns
        if peer in t.fault_peers
    ]
    return json.dumps(
        {"name": "soak", "description": f"per-turn LLM faults of a soak run ({peer})", "rules": rules}
    )
