"""Completed turns and staged candidates for the fine-tuning tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.features.finetune.state.config import set_opt_in
from shared_lib.features.finetune.state.staging import candidate_path
from shared_lib.tools.at_rest import at_rest
from shared_lib.turn.decisions import Verdict
from shared_lib.turn.envelope import Turn
from shared_lib.turn.inbound import InboundMessage
from shared_lib.turn.proposal import Proposal
from shared_lib.turn.steps import ToolResult

ORG = "acme"
NOW = datetime(2026, 11, 25, 3, 0, tzinfo=UTC)
RETENTION = timedelta(days=30)


def text_proposal(reply: str = "了解ウル🐺", confidence: float = 0.9) -> dict[str, Any]:
    return {
        "output_type": "text_response",
        "reasoning": {"intent_understanding": "雑談", "no_tool_reason": "道具は要らない"},
        "confidence": {"overall": confidence},
        "text_response": reply,
    }


def tool_proposal(tool: str = "create_task", confidence: float = 0.9, **params: Any) -> dict[str, Any]:
    return {
        "output_type": "tool_call",
        "reasoning": {"intent_understanding": "タスク依頼", "tool_selection_reason": "タスクを作る"},
        "confidence": {"overall": confidence},
        "tool_calls": [{"tool_name": tool, "parameters": params or {"title": "見積書"}}],
    }


def completed_turn(
    text: str = "今日は暑いね",
    *,
    proposal: dict[str, Any] | None = None,
    user: str = "u1",
    room: str = "r1",
    at: datetime = NOW,
    results_ok: bool | None = None,
    kind: str = "reply",
    n: int = 1,
) -> Turn:
    msg = InboundMessage(
        channel="http",
        org_id=ORG,
        room_id=room,
        user_id=user,
        text=text,
        message_id=f"m{n}-{user}",
        event_id=f"e{n}-{user}",
        received_at=at,
    )
    turn = Turn.from_inbound(msg, traceparent="00-" + "a" * 32 + "-" + "b" * 16 + "-01")
    turn.created_at = at
    turn.flags.arm = "llm"
    turn.proposal.arm = "llm"
    turn.proposal.proposal = Proposal.model_validate(proposal or text_proposal())
    turn.guardian = Verdict.allow()
    turn.context.rendered = "# 相手\n田中太郎（営業部）"
    if results_ok is not None:
        for i, call in enumerate(turn.proposal.proposal.tool_calls):
            turn.execution.results.append(ToolResult(tool_name=call.tool_name, call_index=i, ok=results_ok))
    turn.response.kind = kind  # type: ignore[assignment]
    turn.response.text = "了解ウル🐺"
    return turn


class CountingStore(MemoryStore):
    """A memory store counting its document reads outside transactions."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    def get(self, path: str) -> Any:
        self.reads += 1
        return super().get(path)


def opted_in_store() -> CountingStore:
    store = CountingStore()
    set_opt_in(store, ORG, True)
    return store


def plant(
    store: MemoryStore, cid: str, *, status: str = "accepted", held_out: bool = False, **over: Any
) -> None:
    """A candidate written straight into the store (``raw`` keeps it unmasked: a planted leak)."""
    raw = over.pop("raw", False)
    doc: dict[str, Any] = {
        "turn_id": cid,
        "kind": "good",
        "status": status,
        "held_out": held_out,
        "input": {
            "user": over.pop("user_text", f"お願い {cid}"),
            "context": over.pop("context", "# 相手\n田中"),
        },
        "target": {"proposal": over.pop("proposal", text_proposal(f"了解ウル {cid}")), "reply": "了解ウル"},
        "correction": None,
        "review": None,
        "user_id": over.get("user_id", "u1"),
        "source": {
            "outcome": "reply",
            "tool": over.pop("tool", ""),
            "route": "CHAT",
            "user_id": over.pop("user_id", "u1"),
            "created_at": over.pop("created_at", NOW),
        },
        **over,
    }
    path = candidate_path(ORG, cid)
    store.set(path, doc if raw else at_rest(path, doc, now=NOW, retention=RETENTION))
