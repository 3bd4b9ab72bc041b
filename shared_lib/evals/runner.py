"""One eval case through the product, in process: the composition root builds a runtime (memory
store, in-process bus, recording channels, the demo directory, the case's clock), the flags
serve the brain under test, and every message goes through ingress → context → brain →
guardian → authorizer → executor → responder → observer exactly as a real turn does. Nothing
is called over the network unless the brain under test is a configured LLM.

``Brain`` names the arm and, for the LLM arm, the ``LLM`` port: an injected one (the scripted
model of ``infra``, a test's fake) or ``None`` to let the composition root build the Anthropic
adapter from the settings (``ANTHROPIC_API_KEY``, ``ANTHROPIC_BASE_URL``).

A case's fixtures (``fixtures``) are applied here: a ``policy`` patch becomes the runtime's
policy; a fixed ``proposal`` replaces the brain under test, whichever it is, by the LLM arm over
``FixedProposalLLM`` (every proposal call of the case gets that proposal), so the legacy brain
and any LLM run such a case identically.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol, runtime_checkable

from shared_lib.brain import reply_checks
from shared_lib.demo_data import DEMO_ORG, seed_demo_directory
from shared_lib.errors import ConfigError
from shared_lib.evals.dataset import DECIDING, Case
from shared_lib.evals.fixtures import FixedProposalLLM, patched_policy
from shared_lib.flags import FLAGS_DOC, FlagsDocument, flags_store_doc
from shared_lib.layers.ingress import accept
from shared_lib.ports import LLM
from shared_lib.runtime import Runtime
from shared_lib.settings import Settings
from shared_lib.turn.envelope import Turn
from shared_lib.turn.inbound import InboundMessage
from shared_lib.wiring.composition import build_runtime, wire_inprocess

ROOM = "room-eval"


@dataclass(frozen=True)
class Brain:
    """A brain under test: ``legacy`` (the keyword brain) or an ``llm`` arm with its port."""

    name: str
    arm: Literal["legacy", "llm"]
    llm: LLM | None = None  # llm arm: None = the adapter the settings configure
    model: str | None = None  # the flags' model for this run (None: the flags default)
    peer: str | None = None  # the configured peer ``llm`` is (``charter eval run --peer``)
    served_model: str | None = None  # the model the peer serves for ``model`` (its own name)


@dataclass
class Observed:
    """What the product did with one case (the last turn), plus what every turn of it cost."""

    case_id: str
    route: str | None = None
    arm: str | None = None
    output_type: str | None = None
    tool: str | None = None
    parameters: dict[str, Any] = field(default_factory=dict)
    verdict_action: str | None = None
    verdict_reason: str | None = None
    verdict_covers: list[str] = field(default_factory=list)
    auth_result: str | None = None
    auth_reason: str | None = None
    response_kind: str | None = None
    executed: bool = False
    replies: list[str] = field(default_factory=list)
    last_replies: list[str] = field(default_factory=list)  # said in the room to the case's utterance
    latency_ms: float = 0.0
    cost_usd: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    llm_calls: int = 0
    error: str | None = None

    @property
    def clarification(self) -> bool:
        return self.output_type == "clarification_needed" or self.response_kind == "clarify"

    def leaks(self) -> list[str]:
        """Mask placeholders (「[PHONE_1]」) in what the user was sent."""
        return [leak for text in self.replies for leak in reply_checks.placeholders(text)]

    def iso_dates(self) -> list[str]:
        """ISO dates in what the user was sent (the persona shows 「11月25日（水）」)."""
        return [day for text in self.replies for day in reply_checks.iso_dates(text)]

    def internal_names(self, names: Iterable[str]) -> list[str]:
        """Tool or parameter names (``chatwork_task_create``, ``new_level``) in what the user was sent."""
        return sorted({n for text in self.replies for n in reply_checks.names_in(text, names)})


@runtime_checkable
class Metered(Protocol):
    """An LLM that prices its own calls (a peer under test, at its model's price)."""

    def take_cost(self) -> float:
        """The cost of the calls since the last take."""
        ...


class FixedClock:
    """The runtime's clock: the case's ``now``, the same for every turn of the case."""

    def __init__(self, at: datetime) -> None:
        self.at = at

    def __call__(self) -> datetime:
        return self.at


def eval_settings(environ: dict[str, str] | None = None) -> Settings:
    """The process's settings (the API key, the base URL) on an in-memory, in-process house."""
    return Settings.from_env(
        environ, env="demo", store="memory", bus="inproc", channels="recording", llm_call_log=False
    )


def build_case_runtime(brain: Brain, case: Case, settings: Settings) -> Runtime:
    overrides: dict[str, Any] = {"clock": FixedClock(case.now), "notifiers": []}
    if case.policy is not None:
        overrides["policy"] = patched_policy(case.policy, source=f"case {case.id}: policy")
    if case.proposal is not None:
        brain = Brain(DECIDING, "llm", FixedProposalLLM(case.proposal))  # the same for every brain
    if brain.arm == "legacy" or brain.llm is not None:
        overrides["llm"] = brain.llm
    rt = build_runtime(settings=settings, **overrides)
    if brain.arm == "llm" and rt.llm is None:
        raise ConfigError(
            f"brain {brain.name!r}: no LLM is configured (ANTHROPIC_API_KEY or ANTHROPIC_BASE_URL)"
        )
    doc = FlagsDocument(
        version=f"eval-{brain.name}",
        brain_mode=brain.arm,
        shadow_sample_percent=0,
        **({"model": brain.model} if brain.model else {}),
    )
    rt.store.set(FLAGS_DOC, flags_store_doc(doc))
    seed_demo_directory(rt.store)
    wire_inprocess(rt)
    return rt


def run_case(brain: Brain, case: Case, settings: Settings) -> Observed:
    """Send the case's earlier messages, then its utterance; observe the last turn."""
    rt = build_case_runtime(brain, case, settings)
    seen = Observed(case.id)
    policy = rt.policy
    said = [(t.person or case.person, t.text, t.policy) for t in case.previous]
    said.append((case.person, case.utterance, None))
    turn: Turn | None = None
    room = rt.channels["http"].sent  # type: ignore[attr-defined]
    before = 0
    for index, (person, text, own_policy) in enumerate(said):
        before = len(room)
        # a turn with its own policy: as if the policy had changed before it (and back after it)
        rt.policy = policy if own_policy is None else patched_policy(own_policy, source=f"case {case.id}")
        start = time.perf_counter()
        turn_id = accept(rt, _message(rt, case, index, person, text))
        elapsed = (time.perf_counter() - start) * 1000
        turn = _completed(rt, turn_id)
        if turn is None:
            seen.error = f"turn {index + 1} did not complete"
            break
        seen.latency_ms = round(elapsed, 3)
        seen.cost_usd += turn.usage.cost_usd
        seen.input_tokens += turn.usage.input_tokens
        seen.output_tokens += turn.usage.output_tokens
        seen.llm_calls += turn.usage.llm_calls
    seen.replies = [reply.text for reply in room]
    seen.last_replies = [reply.text for reply in room[before:] if reply.room_id == ROOM]
    if isinstance(brain.llm, Metered) and case.proposal is None:
        seen.cost_usd = brain.llm.take_cost()  # priced as the peer's own model, not the product's name
    if turn is not None and seen.error is None:
        _observe(seen, turn)
    return seen


def _message(rt: Runtime, case: Case, index: int, person: str, text: str) -> InboundMessage:
    return InboundMessage(
        channel="http",
        org_id=DEMO_ORG,
        room_id=ROOM,
        user_id=person,
        text=text,
        message_id=f"{case.id}-{index}",
        event_id=f"eval-{case.id}-{index}",
        received_at=rt.clock(),
    )


def _completed(rt: Runtime, turn_id: str | None) -> Turn | None:
    """The turn as the responder published it to ``completed`` (the in-process bus keeps it)."""
    if turn_id is None:
        return None
    published = getattr(rt.bus, "published", [])
    for topic, data, attributes, _ in reversed(published):
        if topic == "completed" and attributes.get("turn_id") == turn_id:
            return Turn.from_message(data, attributes, rt.store)
    return None


def _observe(seen: Observed, turn: Turn) -> None:
    seen.route = turn.route.route
    seen.arm = turn.proposal.arm
    proposal = turn.proposal.proposal
    if proposal is not None:
        seen.output_type = proposal.output_type
        if proposal.tool_calls:
            seen.tool = proposal.tool_calls[0].tool_name
            seen.parameters = dict(proposal.tool_calls[0].parameters)
    if turn.guardian is not None:
        seen.verdict_action, seen.verdict_reason = turn.guardian.action, turn.guardian.reason_code
        seen.verdict_covers = [str(c) for c in turn.guardian.details.get("covers") or ()]
    if turn.authorization is not None:
        seen.auth_result, seen.auth_reason = turn.authorization.result, turn.authorization.reason_code
    seen.response_kind = turn.response.kind
    seen.executed = any(not r.dry_run for r in turn.execution.results)
