"""The agent state of seed 004 (``shared_lib.features.agent_state.state``): the fixed five within their limits,
Step and Status apart, the transition table read from data, and ``apply``: the code's transition
over the LLM's, at most one per utterance, refusals recorded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from shared_lib.brain.validation import InvalidProposal, validate_proposal
from shared_lib.errors import ConfigError
from shared_lib.features.agent_state.state import (
    TABLE_FILE,
    AgentState,
    CodeTransition,
    apply,
    load_table,
    parse_table,
)
from shared_lib.turn.agent_record import Status, Step
from shared_lib.turn.proposal import StateUpdate, proposal_json_schema
from shared_lib.wiring.features import tool_registry

P, E, R, A, D = Step.PLANNING, Step.EXECUTION, Step.REVIEW, Step.AWAITING_APPROVAL, Step.DONE


def at(step: Step, **fields) -> AgentState:
    return AgentState(step=step, **fields)


def llm(**fields) -> StateUpdate:
    return StateUpdate.model_validate(fields)


# -- the model's limits ------------------------------------------------------------------------


def test_texts_over_their_limit_are_cut_to_it_ending_in_an_ellipsis_and_lists_are_capped():
    state = AgentState(
        goal="目" * 250,
        why_now="今\n" * 150,
        constraints=["a" * 150, "b", "c"],
        plan_brief=["1", "2", "3", "4"],
        open_questions=["q1", "q2", "q3"],
        decision_log=[f"d{i}" for i in range(15)],
    )
    assert len(state.goal) == 200 and state.goal.endswith("…")
    assert "\n" not in state.why_now and len(state.why_now) == 200
    assert state.constraints == ["a" * 99 + "…", "b"]
    assert state.plan_brief == ["1", "2", "3"]
    assert state.open_questions == ["q1", "q2"]
    # the decision log keeps its newest ten
    assert state.decision_log == [f"d{i}" for i in range(5, 15)]


def test_a_text_within_its_limit_is_kept_as_written():
    state = AgentState(goal="目" * 200, plan_brief=["x" * 100])
    assert state.goal == "目" * 200 and state.plan_brief == ["x" * 100]


def test_step_and_status_are_two_fields_and_the_context_view_has_the_prompt_keys():
    view = AgentState(step=A, status=Status.REQUIRES_USER_INPUT).context_view()
    assert (view["step"], view["status"]) == ("AWAITING_APPROVAL", "REQUIRES_USER_INPUT")
    assert set(view) == {
        "goal",
        "why_now",
        "constraints",
        "plan_brief",
        "open_questions",
        "step",
        "status",
        "decision_log",
        "last_delta",
        "pending_gate",
    }


# -- the table, from data ----------------------------------------------------------------------


def test_the_table_is_the_seeds_plus_its_error_transitions_and_done_to_planning():
    table = load_table()
    assert table.pairs(error=False) == {
        (P, E), (P, R), (P, A), (E, R), (E, A), (R, E), (R, A), (R, D), (A, E), (A, P), (D, P)
    }  # fmt: skip
    assert table.errors == {E: P, R: P}
    assert table.allows(E, P, error=True) and not table.allows(E, P, error=False)


def test_an_unknown_step_in_the_table_is_refused_at_load(tmp_path: Path):
    raw = json.loads(TABLE_FILE.read_text(encoding="utf-8"))
    raw["transitions"]["PLANNING"].append("DEPLOY")
    with pytest.raises(ConfigError, match="DEPLOY"):
        parse_table(raw)
    raw = json.loads(TABLE_FILE.read_text(encoding="utf-8"))
    raw["error_transitions"]["TESTING"] = "PLANNING"
    bad = tmp_path / "table.json"
    bad.write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(ConfigError, match="TESTING"):
        load_table(bad)


def test_a_step_to_itself_is_refused_at_load():
    raw = json.loads(TABLE_FILE.read_text(encoding="utf-8"))
    raw["transitions"]["REVIEW"].append("REVIEW")
    with pytest.raises(ConfigError, match="itself"):
        parse_table(raw)


# -- apply: the code's transitions -------------------------------------------------------------


def test_a_code_transition_the_table_allows_is_taken_and_the_delta_says_so():
    state, out = apply(at(P), None, utterance_id="t1", code_transition=CodeTransition(E, Status.SUCCESS))
    assert (state.step, state.status) == (E, Status.SUCCESS)
    assert out.transition is not None and (out.transition.by, out.transition.from_step) == ("code", P)
    assert state.last_delta.startswith("ステップをPLANNINGからEXECUTIONに変更")
    assert state.transition_utterance == "t1"


def test_a_code_transition_the_table_forbids_is_refused_too_and_the_step_stays():
    # DONE -> EXECUTION is not in the table, even when the charter ran a tool
    state, out = apply(at(D), None, utterance_id="t1", code_transition=CodeTransition(E, Status.SUCCESS))
    assert state.step is D and out.transition is None
    assert [(r.by, r.to_step, r.reason) for r in out.refused] == [("code", E, "not_in_table")]
    # the status still changed: it is not a transition
    assert state.status is Status.SUCCESS


def test_the_error_transition_is_taken_only_when_the_step_ends_in_error():
    failed = CodeTransition(P, Status.ERROR, None, "tool.failed")
    state, out = apply(at(E), None, utterance_id="t1", code_transition=failed)
    assert state.step is P and out.transition is not None and out.transition.reason == "tool.failed"
    state, out = apply(at(E), llm(step="PLANNING"), utterance_id="t2", code_transition=None)
    assert state.step is E and [r.reason for r in out.refused] == ["not_in_table"]


# -- apply: the LLM's proposals ----------------------------------------------------------------


def test_an_llm_transition_the_table_allows_is_taken_when_the_code_decided_none():
    state, out = apply(at(E), llm(step="REVIEW"), utterance_id="t1", code_transition=CodeTransition())
    assert state.step is R and out.transition is not None and out.transition.by == "llm"


def test_an_llm_transition_the_table_forbids_is_refused_and_recorded():
    state, out = apply(at(P), llm(step="DONE"), utterance_id="t1", code_transition=None)
    assert state.step is P and out.transition is None
    assert [(r.from_step, r.to_step, r.by, r.reason) for r in out.refused] == [(P, D, "llm", "not_in_table")]


def test_the_codes_transition_wins_over_the_llms():
    confirm = CodeTransition(A, Status.REQUIRES_USER_INPUT, True, "confirm.asked")
    state, out = apply(at(P), llm(step="REVIEW"), utterance_id="t1", code_transition=confirm)
    assert state.step is A and state.pending_gate and out.transition and out.transition.by == "code"
    assert [(r.by, r.to_step, r.reason) for r in out.refused] == [("llm", R, "second_transition")]
    # the code deciding to stay also refuses the LLM's move
    stay = CodeTransition(E, Status.SUCCESS, None, "tool.executed")
    state, out = apply(at(E), llm(step="REVIEW"), utterance_id="t2", code_transition=stay)
    assert state.step is E and [r.reason for r in out.refused] == ["code_decided"]


def test_a_second_transition_in_the_same_utterance_is_refused_and_recorded():
    state, _ = apply(at(P), None, utterance_id="t1", code_transition=CodeTransition(E, Status.SUCCESS))
    # a later step of the same utterance proposes REVIEW (allowed from EXECUTION by the table)
    state, out = apply(state, llm(step="REVIEW"), utterance_id="t1", code_transition=None)
    assert state.step is E and out.transition is None
    assert [(r.by, r.reason) for r in out.refused] == [("llm", "second_transition")]
    # the next utterance may take it
    state, out = apply(state, llm(step="REVIEW"), utterance_id="t2", code_transition=None)
    assert state.step is R and out.transition is not None


def test_proposing_the_current_step_is_no_transition_and_no_refusal():
    state, out = apply(at(E), llm(step="EXECUTION"), utterance_id="t1", code_transition=None)
    assert state.step is E and out.transition is None and out.refused == []


def test_field_updates_are_applied_within_limits_and_status_changes_freely():
    update = llm(
        goal="見積書のタスクを作る" + "。" * 300,
        plan_brief=["担当者を確かめる", "期限を確かめる", "作る", "報告する"],
        decision="田中さんに頼む",
        status="IN_PROGRESS",
    )
    before = at(R, status=Status.SUCCESS, decision_log=["前の決定"])
    state, out = apply(before, update, utterance_id="t1", code_transition=None)
    assert len(state.goal) == 200 and len(state.plan_brief) == 3
    assert state.decision_log == ["前の決定", "田中さんに頼む"]
    assert state.status is Status.IN_PROGRESS and state.step is R and out.transition is None
    assert {"goal", "plan_brief", "decision_log", "status"} <= set(out.changed)
    # the code's status is the word over the LLM's; the LLM never sets the pending gate
    state, _ = apply(
        state, llm(status="SUCCESS"), utterance_id="t2", code_transition=CodeTransition(None, Status.ERROR)
    )
    assert state.status is Status.ERROR and not state.pending_gate


def test_apply_leaves_the_state_it_was_given_unchanged():
    before = at(P, goal="元の目的")
    apply(before, llm(goal="新しい目的", step="EXECUTION"), utterance_id="t1", code_transition=None)
    assert before.goal == "元の目的" and before.step is P and before.transition_utterance is None


# -- the proposal's state_update ---------------------------------------------------------------


def _text_proposal(**extra) -> dict:
    return {
        "output_type": "text_response",
        "reasoning": {
            "intent_understanding": "挨拶をされたので挨拶を返す",
            "no_tool_reason": "雑談でありツールは不要",
        },
        "confidence": {"overall": 0.95},
        "text_response": "こんにちはウル！",
        **extra,
    }


def test_a_proposal_carries_a_valid_state_update_and_a_bad_shape_is_a_validation_error():
    registry = tool_registry()
    ok = validate_proposal(_text_proposal(state_update={"goal": "挨拶に応える", "step": "REVIEW"}), registry)
    assert ok.root.state_update == StateUpdate(goal="挨拶に応える", step=Step.REVIEW)
    for bad in ({"step": "DEPLOYING"}, {"constraints": "一つだけ"}, "PLANNING", {"goal": ["a"]}):
        with pytest.raises(InvalidProposal):
            validate_proposal(_text_proposal(state_update=bad), registry)
    with pytest.raises(ValidationError):
        StateUpdate.model_validate({"status": "FINISHED"})


def test_the_decision_tool_schema_describes_the_state_update_for_the_model():
    schema = proposal_json_schema()["properties"]["state_update"]
    props = schema["properties"]
    assert props["step"]["enum"] == [s.value for s in Step]
    assert props["plan_brief"]["maxItems"] == 3 and props["goal"]["maxLength"] == 200
    assert all(props[k].get("description") for k in ("goal", "plan_brief", "step", "open_questions"))
