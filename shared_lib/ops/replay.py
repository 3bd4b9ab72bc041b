"""``charter replay``: today's guardian, authorization and a dry-run executor on a recorded
proposal, and what would differ. No LLM is called.

The recorded proposal (masked, in the observability record) is put back into a turn with
today's flags for that person, then the very layer functions the chain runs
(``shared_lib.runtime.LAYERS``) judge it, so today's policy configuration is loaded
exactly as the guardian loads it. The replay runtime has no LLM, a bus that discards
what it is given, no notifiers, and a store that reads the real one but keeps its writes
to itself (``OverlayStore``); the executor runs as in shadow mode (validate, write nothing).

A turn of several steps (look, then act) is replayed step by step, each with its own recorded
inputs: its proposal, and the earlier steps as the record keeps them (their results included,
never re-run for the later step). A step whose call committed its effect live (its receipt is in
the store) cannot be dry-run against the world again: that world already holds the effect (the
task it completed is done). Its parameters are validated by today's tool, its verdict and gate
judged again, and its execution is the committed one.

Parameters were masked when recorded (``[EMAIL_1]``): a tool that validates such a value
may fail in the replay where it succeeded live. The report says when that can happen.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from shared_lib.errors import CharterError
from shared_lib.observability.records import ObservabilityRecord
from shared_lib.observability.step_records import StepRow
from shared_lib.ops import queries
from shared_lib.ops.overlay_store import OverlayStore
from shared_lib.policy.config import load_policy_config
from shared_lib.tools.execution import receipt_path
from shared_lib.turn.envelope import FlagsSection, ProposalSection, StepRecord, ToolResult, Turn
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
class StepReplay:
    """One step of the turn: as recorded, as replayed today, and what differs."""

    step: int
    recorded: Decisions
    replayed: Decisions
    differences: list[Difference]

    def as_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "recorded": self.recorded.as_dict(),
            "replayed": self.replayed.as_dict(),
            "differences": [dataclasses.asdict(d) for d in self.differences],
        }


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
    steps: list[StepReplay] = field(default_factory=list)  # every step, the last one as above

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
            "steps": [st.as_dict() for st in self.steps],
        }


def _recorded(rec: ObservabilityRecord, row: StepRow | None = None) -> Decisions:
    """The recorded decisions of the last step (the record's own fields), or of an earlier ``row``
    (a step the loop went on from: it ran its tools)."""
    flags = f"{rec.flags_arm}/{rec.flags_reason}"
    if row is not None:
        ran = f"failed:{row.error_code}" if not row.ok else "executed"
        return Decisions(
            flags=flags,
            guardian=f"{row.verdict}/{row.verdict_reason}",
            authorization=f"{row.authorization}/{row.authorization_reason}",
            execution=ran if row.results else "skipped:-",
            tools=_tools(row.results),
        )
    if rec.tool_calls_executed:
        execution = "executed" if rec.execution_success else f"failed:{rec.execution_error}"
    else:
        execution = f"skipped:{rec.execution_skipped_reason or '-'}"
    return Decisions(
        flags=flags,
        guardian=f"{rec.guardian_action}/{rec.guardian_reason}",
        authorization=f"{rec.auth_result}/{rec.auth_reason}",
        execution=execution,
        tools=_tools(rec.execution_result),
    )


def _tools(results: list[dict[str, Any]]) -> list[str]:
    return [f"{r.get('tool_name')}:{'ok' if r.get('ok') else r.get('error_code')}" for r in results]


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
    """Judge ``rec``'s proposals, every step, with today's configuration (pure of side effects on ``rt``)."""
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
    rows: list[StepRow | None] = list(rec.steps) or [None]
    if any(r is not None and r.proposal is None for r in rows[:-1]):
        rows = rows[-1:]  # recorded before each step kept its proposal: the last step alone, as then
    earlier: list[StepRecord] = []
    steps: list[StepReplay] = []
    for i, row in enumerate(rows):
        last = i == len(rows) - 1
        proposal = rec.proposal if last or row is None else row.proposal
        assert proposal is not None
        turn = _step_turn(rec, flags, proposal, step=rec.step - (len(rows) - 1 - i), approval=last)
        turn.loop.steps = list(earlier)  # the earlier steps as recorded, their results included
        for name in REPLAYED_LAYERS:
            _run_layer(LAYERS[name], turn, replay_rt)
        live = rec.execution_result if last or row is None else row.results
        _committed(turn, replay_rt, live)
        before, after = _recorded(rec, None if last else row), _replayed(turn)
        calls = proposal.get("tool_calls") or []
        masked = bool(_PLACEHOLDER.search(str([c.get("parameters") for c in calls])))
        found = _differences(before, after, masked)
        steps.append(StepReplay(row.step if row is not None else 1, before, after, found))
        earlier.append(
            StepRecord(
                step=row.step if row is not None else 1,
                turn_id=row.turn_id if row is not None else rec.record_id,
                arm=rec.arm,
                proposal=Proposal.model_validate(proposal),
                results=[ToolResult.model_validate(r) for r in live],
            )
        )
    final = steps[-1]
    differences = [d for d in final.differences if d.stage == "flags"]
    for st in steps:
        named = [d for d in st.differences if d.stage != "flags"]
        differences += (
            [dataclasses.replace(d, stage=f"step {st.step} {d.stage}") for d in named]
            if len(steps) > 1
            else named
        )
    return ReplayReport(
        turn_id=rec.record_id,
        org_id=rec.organization_id,
        recorded_at=rec.timestamp,
        replayed_at=now,
        recorded=final.recorded,
        replayed=final.replayed,
        differences=differences,
        masked_parameters=bool(_PLACEHOLDER.search(str([t.parameters for t in rec.selected_tools]))),
        published=[topic for topic, *_ in bus.published],
        steps=steps,
    )


def _step_turn(
    rec: ObservabilityRecord, flags: FlagsSection, proposal: dict[str, Any], *, step: int, approval: bool
) -> Turn:
    """A dry-run turn holding one recorded step's proposal, as the guardian received it."""
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
    return Turn(
        turn_id=rec.record_id,
        conversation_key=rec.conversation_key,
        org_id=rec.organization_id,
        user_id=rec.user_id,
        room_id=rec.room_id,
        channel=inbound.channel,
        step=max(0, step),
        created_at=rec.timestamp,
        shadow=True,
        inbound=inbound,
        flags=flags,
        proposal=ProposalSection.model_validate(
            {
                "arm": rec.arm,
                "model": rec.llm_model,
                "proposal": Proposal.model_validate(proposal),
                "approval": rec.approval if approval else None,
            }
        ),
    )


def _committed(turn: Turn, rt: Runtime, live: list[dict[str, Any]]) -> None:
    """A call that committed its effect live (its receipt is done in the store) is not dry-run
    against the world again: that world holds its effect. Its parameters pass today's tool, so
    its execution is the committed one; any other failure of the dry run stands."""
    recorded = {r.get("call_index"): r for r in live}
    for k, result in enumerate(turn.execution.results):
        was = recorded.get(result.call_index) or {}
        if result.ok or not was.get("ok") or not was.get("receipt_id"):
            continue
        receipt = rt.store.get(receipt_path(turn.org_id, str(was["receipt_id"])))
        if receipt is None or receipt.get("status", "done") != "done" or not _valid(rt, turn, result):
            continue
        turn.execution.results[k] = result.model_copy(
            update={
                "ok": True,
                "error_code": None,
                "replayed": True,
                "result": {"committed": was["receipt_id"]},
            }
        )


def _valid(rt: Runtime, turn: Turn, result: ToolResult) -> bool:
    """The call's recorded parameters pass today's tool (its schema, not the world)."""
    spec = rt.registry.get(result.tool_name)
    assert turn.proposal.proposal is not None
    calls = turn.proposal.proposal.tool_calls
    if spec is None or not spec.enabled or result.call_index >= len(calls):
        return False
    params = dict(calls[result.call_index].parameters)
    try:
        spec.params.model_validate(rt.registry.canonical_parameters(spec.name, params))
    except ValidationError:
        return False
    return True


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
