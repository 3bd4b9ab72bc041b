"""Fakes and builders for the tool tests: a directory, a fixed clock, an executor and a
call helper. Shared by the unit tests and the emulator tests (``tests.unit.tools.tool_fakes``)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from shared_lib.ports import Store
from shared_lib.privacy.org_vault import OrgVault
from shared_lib.tools.execution import CallOutcome, CallRequest, ToolExecutor
from shared_lib.tools.registry import ToolContext, ToolRegistry, ToolSpec
from shared_lib.tools.task_backend import StoreTaskBackend, TaskBackend
from shared_lib.wiring.features import tool_registry

ORG = "acme"
OTHER_ORG = "globex"
ROOM = "500"
SENDER = "u-suzuki"
NOW = datetime(2026, 1, 28, 3, 0, tzinfo=UTC)  # Wednesday 2026-01-28, 12:00 in Tokyo
PEOPLE: list[dict[str, Any]] = [
    {
        "user_id": "u-suzuki",
        "name": "鈴木一郎",
        "level": 2,
        "department_id": "d-sales",
        "chatwork_account_id": "101",
    },
    {
        "user_id": "u-tanaka1",
        "name": "田中太郎",
        "level": 2,
        "department_id": "d-sales",
        "chatwork_account_id": "102",
    },
    {
        "user_id": "u-tanaka2",
        "name": "田中花子",
        "level": 2,
        "department_id": "d-dev",
        "chatwork_account_id": "103",
    },
    {
        "user_id": "u-yamada",
        "name": "山田次郎",
        "level": 4,
        "department_id": "d-sales-east",
        "chatwork_account_id": "104",
    },
    {"user_id": "u-boss", "name": "カズ", "level": 6, "department_id": "d-hq", "chatwork_account_id": "105"},
]
DEPARTMENTS: dict[str, str | None] = {
    "d-hq": None,
    "d-sales": "d-hq",
    "d-sales-east": "d-sales",
    "d-dev": "d-hq",
}


def seed(store: Store, org: str = ORG, people: list[dict[str, Any]] | None = None) -> None:
    from shared_lib.tools.directory import seed_directory

    seed_directory(store, org, people or PEOPLE, DEPARTMENTS)


@dataclass
class Clock:
    at: datetime = NOW

    def __call__(self) -> datetime:
        return self.at

    def advance(self, **delta: float) -> None:
        self.at += timedelta(**delta)


def make_executor(
    store: Store,
    *,
    tasks: TaskBackend | None = None,
    clock: Clock | None = None,
    registry: ToolRegistry | None = None,
    retention: timedelta | None = None,
    vault: OrgVault | None = None,
) -> ToolExecutor:
    clk = clock or Clock()
    return ToolExecutor(
        store,
        registry or tool_registry(),
        tasks=tasks or StoreTaskBackend(store, clock=clk),
        clock=clk,
        retention=(lambda org: retention) if retention is not None else None,
        vault=vault,
    )


def call(
    executor: ToolExecutor,
    tool: str,
    params: dict[str, Any] | None = None,
    *,
    user: str = SENDER,
    org: str = ORG,
    call_id: str = "turn1-0-0",
    room: str = ROOM,
    dry_run: bool = False,
    channel: str = "",
) -> CallOutcome:
    return executor.execute(
        CallRequest(
            tool_name=tool,
            parameters=params or {},
            org_id=org,
            user_id=user,
            room_id=room,
            conversation_key=f"{org}/{room}/{user}",
            call_id=call_id,
            dry_run=dry_run,
            channel=channel,
        )
    )


def docs(store: Store, collection: str, org: str = ORG) -> dict[str, dict[str, Any]]:
    return dict(store.query(f"orgs/{org}/{collection}"))


# -- tools made for the executor tests --------------------------------------------------------
class NoteParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = Field(min_length=1, description="what to note")


@dataclass
class FakeTools:
    """Handlers that count, block, crash or reach outside their organisation."""

    invocations: int = 0
    release: threading.Event = field(default_factory=threading.Event)

    def note(self, p: NoteParams, ctx: ToolContext, txn: Any) -> dict[str, Any]:
        self.invocations += 1
        if ctx.dry_run:
            return {"dry_run": True}
        txn.set(f"orgs/{ctx.org_id}/notes/{ctx.turn_id}", {"text": p.text})
        return {"noted": p.text, "n": self.invocations}

    def slow(self, p: NoteParams, ctx: ToolContext, txn: Any) -> dict[str, Any]:
        self.release.wait(30)
        txn.set(f"orgs/{ctx.org_id}/notes/slow", {"text": p.text})
        return {"slow": True}

    def boom(self, p: NoteParams, ctx: ToolContext, txn: Any) -> dict[str, Any]:
        raise RuntimeError("handler bug with a secret inside")

    def peek_other_org(self, p: NoteParams, ctx: ToolContext, txn: Any) -> dict[str, Any]:
        return {"other": ctx.store.get(f"orgs/{OTHER_ORG}/notes/x")}

    def sneaky_write(self, p: NoteParams, ctx: ToolContext, txn: Any) -> dict[str, Any]:
        ctx.store.set(f"orgs/{ctx.org_id}/notes/sneaky", {"text": p.text})
        return {}

    def specs(self) -> list[ToolSpec]:
        base = {"examples": ("a", "b", "c"), "params": NoteParams, "min_level": 1, "keywords": ("note",)}
        return [
            ToolSpec("note", "note a thing", handler=self.note, effect="store", **base),
            ToolSpec("slow", "slow", handler=self.slow, effect="store", timeout_seconds=0.05, **base),
            ToolSpec("boom", "boom", handler=self.boom, effect="store", **base),
            ToolSpec("peek", "peek", handler=self.peek_other_org, effect="read", **base),
            ToolSpec("sneaky", "sneaky", handler=self.sneaky_write, effect="read", **base),
            ToolSpec("off", "disabled", handler=self.note, effect="store", enabled=False, **base),
        ]


def registry_with(tools: FakeTools) -> ToolRegistry:
    registry = tool_registry()
    for spec in tools.specs():
        registry.register(spec)
    return registry


# -- a decided turn for the executor layer ----------------------------------------------------
def turn_with(calls, *, org=ORG, verdict=None, shadow=False, turn_id="01TURNAAAAAAAAAAAAAAAAAAAA") -> Any:
    """A turn whose proposal makes ``calls`` ((tool, parameters) pairs), allowed by guardian and gate."""
    from shared_lib.turn.decisions import AuthDecision, Verdict
    from shared_lib.turn.envelope import Turn
    from shared_lib.turn.inbound import InboundMessage
    from shared_lib.turn.proposal import Proposal

    msg = InboundMessage(
        channel="http",
        org_id=org,
        room_id=ROOM,
        user_id=SENDER,
        text="お願い",
        message_id="m1",
        event_id="e1",
        received_at=datetime(2026, 1, 28, tzinfo=UTC),
    )
    turn = Turn.from_inbound(msg).model_copy(update={"turn_id": turn_id, "shadow": shadow})
    turn.proposal.proposal = Proposal.model_validate(
        {
            "output_type": "tool_call",
            "confidence": {"overall": 0.9},
            "reasoning": {
                "intent_understanding": "依頼を理解した",
                "tool_selection_reason": "該当するツールがある",
            },
            "tool_calls": [{"tool_name": name, "parameters": params} for name, params in calls],
        }
    )
    turn.guardian = verdict or Verdict.allow()
    turn.authorization = AuthDecision.allowed(user_level=2, required_level=1)
    return turn
