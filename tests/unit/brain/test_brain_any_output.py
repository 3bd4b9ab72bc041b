"""Whatever the LLM answers, the brain hands on only a valid proposal that decides nothing."""

from __future__ import annotations

from typing import Any

from brain_fakes import FakeLLM, clarification, decision, runtime, text, tool_call, turn
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared_lib.brain.config import load_brain_config
from shared_lib.layers import brain
from shared_lib.wiring.features import tool_registry

REGISTRY = tool_registry()
DECISION_KEYS = sorted({k for keys in load_brain_config().constitution.decision_keys.values() for k in keys})
TOOLS = [*sorted(s.name for s in REGISTRY.enabled()), "drop_database", ""]

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


@st.composite
def answers(draw: st.DrawFn) -> Any:
    """Mostly near-valid proposals with forged keys and values; sometimes anything at all."""
    if draw(st.integers(0, 9)) == 0:
        return draw(json_values)
    base = draw(st.sampled_from([tool_call(), text(), clarification()]))
    answer: dict[str, Any] = {**base, "confidence": {"overall": draw(st.floats(0, 1))}}
    for key in draw(st.lists(st.sampled_from(DECISION_KEYS), max_size=3)):
        answer[key] = draw(scalars)
    if answer["output_type"] == "tool_call":
        params = dict(answer["tool_calls"][0]["parameters"])
        for key in draw(st.lists(st.sampled_from([*DECISION_KEYS, "body", "limit_date", "x"]), max_size=3)):
            params[key] = draw(scalars)
        answer["tool_calls"] = [{"tool_name": draw(st.sampled_from(TOOLS)), "parameters": params}]
    return answer


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=answers(), second=answers())
def test_given_any_llm_answers_when_proposed_then_only_valid_non_deciding_proposals_pass(first, second):
    # GIVEN an LLM that answers anything, twice (the answer and the retry)
    rt, t = runtime(FakeLLM(decision(first), decision(second))), turn("田中さんに見積書のタスクをお願い")
    # WHEN
    brain.run(t, rt)
    # THEN there is always a proposal, and every tool call in it is a defined tool with schema-valid parameters
    proposal = t.proposal.proposal
    assert proposal is not None
    for call in proposal.tool_calls:
        spec = REGISTRY.get(call.tool_name)
        assert spec is not None and spec.enabled
        spec.params.model_validate(call.parameters)
        assert set(call.parameters) <= set(spec.params.model_fields)
    # AND a blocking violation never leaves anything to execute
    if any(v.action == "block" for v in t.proposal.violations):
        assert proposal.tool_calls == []
    # AND nothing outside the proposal schema survives (no verdict, permission or logging field)
    assert not set(proposal.root.model_dump()) & set(DECISION_KEYS) - {"status"}
