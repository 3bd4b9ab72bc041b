"""Property (issue 17, issue 37): no sequence of proposals makes the agent state's step machine
take a transition the table forbids, more than one per step, or an LLM's transition after any
other on the same utterance — whatever the code decided and whatever the LLM proposed (any
step names, invalid ones included, several per utterance). The code's transitions of one
utterance's steps form a chain along the table (a search, then a step-2 confirmation)."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from shared_lib.features.agent_state.state import AgentState, CodeTransition, apply, load_table
from shared_lib.turn.agent_record import Status, Step
from shared_lib.turn.proposal import StateUpdate

STEP_NAMES = [s.value for s in Step]
ANY_STEP = st.one_of(
    st.sampled_from(STEP_NAMES), st.sampled_from(["", "IDLE", "COMPLETED", "planning"]), st.text()
)
ANY_STATUS = st.one_of(st.none(), st.sampled_from([s.value for s in Status]), st.sampled_from(["DONE", "OK"]))

code_outcomes = st.builds(
    CodeTransition,
    to=st.one_of(st.none(), st.sampled_from(list(Step))),
    status=st.one_of(st.none(), st.sampled_from(list(Status))),
    pending_gate=st.one_of(st.none(), st.booleans()),
    cause=st.sampled_from(["confirm.asked", "tool.executed", "tool.failed", "approval.granted", ""]),
)
llm_proposals = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {},
        optional={
            "step": ANY_STEP,
            "status": ANY_STATUS,
            "goal": st.text(max_size=300),
            "plan_brief": st.lists(st.text(max_size=120), max_size=5),
        },
    ),
)
steps_of_an_utterance = st.lists(st.tuples(code_outcomes, llm_proposals), min_size=1, max_size=4)
conversations = st.lists(steps_of_an_utterance, min_size=1, max_size=12)
start_steps = st.sampled_from(list(Step))


def proposed(raw: dict[str, Any] | None) -> StateUpdate | None:
    """The LLM's update as the proposal validation lets it through: an invalid one never applies."""
    if raw is None:
        return None
    try:
        return StateUpdate.model_validate(raw)
    except ValidationError:
        return None


@settings(max_examples=300, deadline=None)
@given(start=start_steps, conversation=conversations)
def test_no_sequence_of_proposals_takes_a_forbidden_transition_or_a_second_llm_one(start, conversation):
    table = load_table()
    state = AgentState(step=start)
    for n, steps in enumerate(conversation):
        utterance = f"t{n}"
        taken = []
        for code, raw in steps:
            before = state.step
            state, out = apply(state, proposed(raw), utterance_id=utterance, code_transition=code)
            if out.transition is None:
                # THEN without a transition the step never moves
                assert state.step is before
                continue
            t = out.transition
            # THEN a taken transition is one of the table's (an error one only when ending in ERROR)
            assert (t.from_step, t.to_step) == (before, state.step)
            assert table.allows(t.from_step, t.to_step, error=state.status is Status.ERROR), t
            taken.append(t)
        # THEN the LLM moves the step at most once per utterance, and only as its first move
        assert all(t.by == "code" for t in taken[1:]), taken
        # AND every later move is the code's, one per step, chained along the table
        assert all(a.to_step == b.from_step for a, b in itertools.pairwise(taken)), taken


@settings(max_examples=100, deadline=None)
@given(start=start_steps, steps=steps_of_an_utterance)
def test_every_proposal_that_could_move_the_step_is_either_taken_or_recorded_as_refused(start, steps):
    state = AgentState(step=start)
    for code, raw in steps:
        before = state.step
        update = proposed(raw)
        state, out = apply(state, update, utterance_id="t1", code_transition=code)
        wanted = {c for c in (code.to, update.step if update else None) if c is not None and c is not before}
        decided = {t.to_step for t in [out.transition, *out.refused] if t is not None}
        # THEN nothing asked for silently vanished
        assert wanted <= decided, (before, code, update, out)
