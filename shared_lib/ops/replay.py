"""``charter replay``: today's guardian, authorization and a dry-run executor on a recorded
proposal, and what would differ. No LLM is called.

The recorded proposal (masked, in the observability record) is put back into a turn with
today's flags for that person, then the very layer functions the chain runs
(``shared_lib.runtime.LAYERS``) judge it, so today's policy configuration is loaded
exactly as the guardian loads it. The replay runtime has no LLM, a bus that discards
what it is given, no notifiers, and a store that reads the real one but keeps its writes
to itself (``OverlayStore``); the executor runs as in shadow mode (validate, write nothing).

Parameters were masked when recorded (``[EMAIL_1]``): a tool that validates such a value
may fail in the replay where it succeeded live. The report says when that can happen.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from shared_lib.errors import CharterError
from shared_lib.observability.records import ObservabilityRecord
from shared_lib.ops import queries
from shared_lib.ops.overlay_store import OverlayStore
from shared_lib.policy.config import load_policy_config
from shared_lib.turn.envelope import ProposalSection, Turn
from shared_lib.turn.inbound import InboundMessage
from shared_lib.turn.proposal import Proposal

if TYPE_CHECKING:
    from shared_lib.layers.base import Layer
    from shared_lib.runtime import Runtime

REPLAYED_LAYERS = ("guardian", "authorizer", "executor")
_PLACEHOLDER = re.compile(r"\[[A-Z][A-Z0-9_]*_\d+\]")


class ReplayError(CharterError):
    """The turn cannot be replayed (not found, or no proposal was recorded)."""


class DiscardingBus:
    """A ``Bus`` that keeps what it is given in memory (nothing leaves the replay)."""

    def __init__(self) -> None:
        self.published: list[tuple[str, bytes, dict[str, str], str]] = []

    def publish(self, topic_key: str, data: bytes, attributes: dict[str, str], ordering_key: str = "") -> str:
        self.published.append((topic_key, data, attributes, ordering_key))
        return f"replay-{len(self.published)}"


@dataclass(frozen=True)
class Decisions:
    flags: str
    guardian: str
    authorization: str
    execution: str
    tools: list[str]

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Difference:
    stage: str
    recorded: str
    replayed: str
    note: str = ""


@dataclass(frozen=True)
class ReplayReport:
    turn_id: str
    org_id: str
    recorded_at: datetime
    replayed_at: datetime
    recorded: Decisions
    replayed: Decisions
    differences: list[Difference]
    masked_parameters: bool
    llm_calls: int = 0
    published: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.differences)

    def as_dict(self) -> dict[str, Any]:
        return {
            "turn_id": self.turn_id,
            "org_id": self.org_id,
            "recorded_at": self.recorded_at.isoformat(),
            "replayed_at": self.replayed_at.isoformat(),
            "recorded": self.recorded.as_dict(),
            "replayed": self.replayed.as_dict(),
            "changed": self.changed,
            "differences": [dataclasses.asdict(d) for d in self.differences],
            "masked_parameters": self.masked_parameters,
            "llm_calls": self.llm_calls,
        }


def _recorded(rec: ObservabilityRecord) -> Decisions:
    if rec.tool_calls_executed:
        execution = "executed" if rec.execution_success else f"failed:{rec.execution_error}"
    else:
        execution = f"skipped:{rec.execution_skipped_reason or '-'}"
    tools = [
        f"{r.get('tool_name')}:{'ok' if r.get('ok') else r.get('error_code')}" for r in rec.execution_result
    ]
    return Decisions(
        flags=f"{rec.flags_arm}/{rec.flags_reason}",
        guardian=f"{rec.guardian_action}/{rec.guardian_reason}",
        authorization=f"{rec.auth_result}/{rec.auth_reason}",
        execution=execution,
        tools=tools,
    )


def _replayed(turn: Turn) -> Decisions:
    ex = turn.execution
    if ex.results:
        failed = [r for r in ex.results if not r.ok]
        execution = f"failed:{failed[0].error_code}" if failed else "executed"
    else:
        execution = f"skipped:{ex.skipped_reason or '-'}"
    g, a = turn.guardian, turn.authorization
    return Decisions(
        flags=f"{turn.flags.arm}/{turn.flags.reason}",
        guardian=f"{g.action}/{g.reason_code}" if g else "none/",
        authorization=f"{a.result}/{a.reason_code}" if a else "none/",
        execution=execution,
        tools=[f"{r.tool_name}:{'ok' if r.ok else r.error_code}" for r in ex.results],
    )


def replay_turn(rt: Runtime, rec: ObservabilityRecord) -> ReplayReport:
    """Judge ``rec``'s proposal with today's configuration (pure of side effects on ``rt``)."""
    from shared_lib.wiring.composition import LAYERS

    if rec.proposal is None:
        raise ReplayError(f"turn {rec.turn_id} has no recorded proposal (response kind {rec.response_kind})")
    now = rt.clock()
    bus = DiscardingBus()
    replay_rt = dataclasses.replace(
        rt,
        store=OverlayStore(rt.store),
        bus=bus,
        llm=None,
        channels={},
        notifiers=[],
        policy=load_policy_config(),  # today's policy file, not the one the runtime started with
    )
    flags, _ = rt.flags.evaluate(rec.organization_id, rec.user_id, now)
    inbound = InboundMessage.model_validate(
        {
            "channel": rec.channel,
            "org_id": rec.organization_id,
            "room_id": rec.room_id,
            "user_id": rec.user_id,
            "text": rec.input_message,
            "message_id": f"replay-{rec.record_id}",
            "event_id": f"replay-{rec.record_id}",
            "received_at": rec.timestamp,
        }
    )
    turn = Turn(
        turn_id=rec.record_id,
        conversation_key=rec.conversation_key,
        org_id=rec.organization_id,
        user_id=rec.user_id,
        room_id=rec.room_id,
        channel=inbound.channel,
        step=rec.step,
        created_at=rec.timestamp,
        shadow=True,
        inbound=inbound,
        flags=flags,
        proposal=ProposalSection.model_validate(
            {
                "arm": rec.arm,
                "model": rec.llm_model,
                "proposal": Proposal.model_validate(rec.proposal),
                "approval": rec.approval,
            }
        ),
    )
    for name in REPLAYED_LAYERS:
        _run_layer(LAYERS[name], turn, replay_rt)
    before, after = _recorded(rec), _replayed(turn)
    masked = bool(_PLACEHOLDER.search(str([t.parameters for t in rec.selected_tools])))
    return ReplayReport(
        turn_id=rec.record_id,
        org_id=rec.organization_id,
        recorded_at=rec.timestamp,
        replayed_at=now,
        recorded=before,
        replayed=after,
        differences=_differences(before, after, masked),
        masked_parameters=masked,
        published=[topic for topic, *_ in bus.published],
    )


def replay(rt: Runtime, turn_id: str, *, org: str | None = None) -> ReplayReport:
    rec = queries.find_record(rt.store, turn_id, org=org)
    if rec is None:
        raise ReplayError(f"no observability record for turn {turn_id}")
    return replay_turn(rt, rec)


def _differences(before: Decisions, after: Decisions, masked: bool) -> list[Difference]:
    out = []
    for stage in ("flags", "guardian", "authorization", "execution"):
        old, new = getattr(before, stage), getattr(after, stage)
        if old != new:
            note = ""
            if stage == "flags":
                note = (
                    "today another brain would serve this person; the recorded proposal is judged as it was"
                )
            elif stage == "execution" and masked and "validation_error" in new:
                note = "parameters were masked in the record; the live values may have passed"
            out.append(Difference(stage, old, new, note))
    if before.tools and after.tools and before.tools != after.tools:
        out.append(
            Difference(
                "tools",
                ", ".join(before.tools),
                ", ".join(after.tools),
                "dry run" + ("; parameters were masked in the record" if masked else ""),
            )
        )
    return out


def _run_layer(layer: Layer, turn: Turn, rt: Runtime) -> None:
    if layer.run is None:
        raise ReplayError(f"layer {layer.name} does not run over a turn")
    layer.run(turn, rt.for_turn(turn))
