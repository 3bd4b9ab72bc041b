"""Builders and fakes shared by the policy and state tests (imported as
``tests.unit.policy.policy_fakes``): proposals, policy variants, a settable clock, and the
real in-process pipeline with a scripted proposer in place of the legacy brain."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from shared_lib.layers.ingress import accept
from shared_lib.policy.config import POLICY_FILE, PolicyConfig, parse_policy_config
from shared_lib.runtime import Runtime
from shared_lib.state.session import load_session
from shared_lib.tools.directory import seed_directory
from shared_lib.turn.inbound import InboundMessage
from shared_lib.turn.proposal import Proposal
from shared_lib.wiring.composition import build_runtime, wire_inprocess

JST = ZoneInfo("Asia/Tokyo")
NOW = datetime(2025, 1, 15, 10, 0, tzinfo=JST)  # a Wednesday morning in Tokyo
ORG = "acme"
REASONING = {
    "intent_understanding": "ユーザーは依頼した内容をそのまま実行してほしいのだと理解した",
    "tool_selection_reason": "依頼の内容に最も合うツールなのでこれを選んだ",
}
TEXT_REASONING = {
    "intent_understanding": "雑談として話しかけられたので会話で返すのがよいと理解した",
    "no_tool_reason": "ツールを使う必要がない雑談なので直接答える",
}


def tool_call(
    tool: str,
    params: dict[str, Any] | None = None,
    *,
    confidence: float = 0.95,
    reasoning: dict[str, Any] | None = None,
    calls: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> Proposal:
    return Proposal.model_validate(
        {
            "output_type": "tool_call",
            "reasoning": {**REASONING, **(reasoning or {})},
            "confidence": {"overall": confidence},
            "tool_calls": calls or [{"tool_name": tool, "parameters": params or {}}],
            **extra,
        }
    )


def text_answer(text: str, *, confidence: float = 0.9, reasoning: dict[str, Any] | None = None) -> Proposal:
    return Proposal.model_validate(
        {
            "output_type": "text_response",
            "reasoning": {**TEXT_REASONING, **(reasoning or {})},
            "confidence": {"overall": confidence},
            "text_response": text,
        }
    )


def _merge(base: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in patch.items():
        out[key] = (
            _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
        )
    return out


def policy_data(**patch: Any) -> dict[str, Any]:
    return _merge(json.loads(POLICY_FILE.read_text(encoding="utf-8")), patch)


def config(**patch: Any) -> PolicyConfig:
    """The packaged policy with ``patch`` merged in (nested dicts merge, lists replace)."""
    return parse_policy_config(policy_data(**patch))


@dataclass
class Clock:
    now: datetime = NOW

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now = self.now + timedelta(**delta)


PEOPLE = [
    {"user_id": "u1", "name": "鈴木一郎", "level": 2, "department_id": "sales"},
    {"user_id": "u2", "name": "田中太郎", "level": 2, "department_id": "sales"},
    {"user_id": "boss", "name": "山本社長", "level": 6, "department_id": "hq"},
    {"user_id": "intern", "name": "佐藤見習", "level": 1, "department_id": "sales"},
]
DEPARTMENTS: dict[str, str | None] = {"hq": None, "sales": "hq", "dev": "hq"}


@dataclass
class Pipeline:
    """The real in-process chain; ``script`` maps a message text to the proposal the brain makes."""

    rt: Runtime
    clock: Clock
    script: dict[str, Proposal] = field(default_factory=dict)
    proposed_for: list[str] = field(default_factory=list)
    count: int = 0

    def propose(self, text: str, *args: Any, **kwargs: Any) -> Proposal:
        self.proposed_for.append(text)
        return self.script.get(text) or text_answer("わかったウル🐺 ほかに何かあるウル？")

    def message(self, text: str, user: str = "u1", room: str = "r1") -> InboundMessage:
        self.count += 1
        return InboundMessage(
            channel="http",
            org_id=ORG,
            room_id=room,
            user_id=user,
            text=text,
            message_id=f"m{self.count}",
            event_id=f"e{self.count}",
            received_at=self.clock(),
        )

    def say(self, text: str, user: str = "u1", room: str = "r1") -> str:
        accept(self.rt, self.message(text, user, room))
        return str(self.rt.channels["http"].sent[-1].text)  # type: ignore[attr-defined]

    def session(self, user: str = "u1") -> dict[str, Any]:
        return load_session(self.rt.store, ORG, f"{ORG}/r1/{user}", self.clock())

    def receipts(self) -> list[dict[str, Any]]:
        return [doc for _, doc in self.rt.store.query(f"orgs/{ORG}/receipts")]

    def records(self) -> list[dict[str, Any]]:
        return [doc for _, doc in self.rt.store.query(f"orgs/{ORG}/observability")]


def pipeline(
    monkeypatch: Any,
    *,
    people: list[dict[str, Any]] | None = None,
    departments: dict[str, str | None] | None = None,
    policy: PolicyConfig | None = None,
    setup: Callable[[Runtime], None] | None = None,
) -> Pipeline:
    clock = Clock()
    rt = build_runtime(
        {"CHARTER_ENV": "test", "CHARTER_LLM": "none", "CHARTER_CHANNELS": "recording"}, clock=clock
    )
    if policy is not None:
        rt.policy = policy
    wire_inprocess(rt)
    seed_directory(rt.store, ORG, people or PEOPLE, departments or DEPARTMENTS)
    if setup:
        setup(rt)
    pipe = Pipeline(rt=rt, clock=clock)
    monkeypatch.setattr("shared_lib.brain.legacy.propose", pipe.propose)
    return pipe
