"""The proposal model: each output type, validation failures, the confidence table (§5.2.3b)."""

from __future__ import annotations

import pytest
from brain_fakes import clarification, text, tool_call

from shared_lib.brain.confidence import apply_band
from shared_lib.brain.config import load_brain_config
from shared_lib.brain.validation import InvalidProposal, validate_proposal
from shared_lib.persona.catalogue import load_persona
from shared_lib.turn.proposal import ClarificationProposal, Proposal, TextResponseProposal, ToolCallProposal
from shared_lib.wiring.features import tool_registry

REGISTRY = tool_registry()
CFG = load_brain_config()
PERSONA = load_persona()


# -- the three output types ------------------------------------------------------------------
def test_given_a_tool_call_when_validated_then_reasoning_confidence_sources_and_question_are_kept():
    # GIVEN a full tool_call answer
    raw = tool_call(overall=0.8, confirmation_question="田中さんでいいウル？", needs_confirmation=True)
    raw["confidence"] = {"overall": 0.8, "intent": 0.9, "parameters": 0.7}
    # WHEN
    proposal = validate_proposal(raw, REGISTRY)
    # THEN
    root = proposal.root
    assert isinstance(root, ToolCallProposal)
    assert root.reasoning.context_used == ["ユーザーの最新メッセージ"]
    assert root.reasoning.alternatives_considered and root.reasoning.tool_selection_reason
    assert (root.confidence.overall, root.confidence.intent, root.confidence.parameters) == (0.8, 0.9, 0.7)
    assert root.tool_calls[0].parameter_sources == {"body": "user_message", "assignee_name": "user_message"}
    assert root.confirmation_question == "田中さんでいいウル？" and root.needs_confirmation


def test_given_a_text_response_when_validated_then_it_is_a_text_response():
    proposal = validate_proposal(text(), REGISTRY)
    assert isinstance(proposal.root, TextResponseProposal) and proposal.root.reasoning.no_tool_reason


def test_given_a_clarification_when_validated_then_question_and_options_are_kept():
    proposal = validate_proposal(clarification(), REGISTRY)
    assert isinstance(proposal.root, ClarificationProposal)
    assert proposal.root.options == ["佐藤一郎", "佐藤花子"]
    assert proposal.root.reasoning.possible_interpretations


# -- validation failures -----------------------------------------------------------------------
@pytest.mark.parametrize(
    "raw, fragment",
    [
        ("not an object", "must be a JSON object"),
        ({"output_type": "do_it_now", "reasoning": {}, "confidence": {"overall": 1}}, "output_type"),
        ({**text(), "confidence": {"overall": 1.7}}, "confidence.overall"),
        ({**text(), "confidence": {}}, "overall"),
        ({k: v for k, v in text().items() if k != "text_response"}, "text_response"),
        ({**tool_call(), "tool_calls": []}, "tool_calls"),
        (
            {k: v for k, v in clarification().items() if k != "clarification_question"},
            "clarification_question",
        ),
        ({**tool_call(), "reasoning": {"intent_understanding": "x"}}, "tool_selection_reason"),
    ],
)
def test_given_a_malformed_answer_when_validated_then_it_is_invalid_with_guidance(raw, fragment):
    with pytest.raises(InvalidProposal) as caught:
        validate_proposal(raw, REGISTRY)
    assert fragment in str(caught.value) and caught.value.code == "parse_error"


def test_given_an_unknown_tool_when_validated_then_it_is_an_invalid_proposal_naming_the_defined_tools():
    with pytest.raises(InvalidProposal) as caught:
        validate_proposal(tool_call("drop_database", {}), REGISTRY)
    assert "'drop_database' is not a defined tool" in str(caught.value) and "chatwork_task_create" in str(
        caught.value
    )
    assert caught.value.code == "invalid_tool_call"


@pytest.mark.parametrize(
    "params, fragment",
    [
        ({"body": "見積書"}, "assignee_name"),  # required parameter missing
        ({"body": "見積書", "assignee_name": "田中", "priority": "high"}, "priority"),  # not in the schema
        ({"body": "", "assignee_name": "田中"}, "body"),  # violates the field's rule
        ({"body": ["a"], "assignee_name": "田中"}, "body"),  # wrong type
    ],
)
def test_given_parameters_not_matching_the_tool_schema_when_validated_then_it_is_invalid(params, fragment):
    with pytest.raises(InvalidProposal) as caught:
        validate_proposal(tool_call(params=params), REGISTRY)
    assert f"parameters.{fragment}" in str(caught.value) and caught.value.code == "invalid_tool_call"


# -- the confidence table ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "overall, band",
    [
        (1.0, "very_high"),
        (0.9, "very_high"),
        (0.89, "high"),
        (0.7, "high"),
        (0.69, "medium"),
        (0.5, "medium"),
        (0.49, "low"),
        (0.3, "low"),
        (0.29, "very_low"),
        (0.0, "very_low"),
    ],
)
def test_given_each_boundary_of_the_table_when_banded_then_the_row_is_the_seeds(overall, band):
    assert CFG.band(overall).name == band


@pytest.mark.parametrize("overall", [1.0, 0.9, 0.89, 0.7])
def test_given_a_high_confidence_tool_call_when_applied_then_it_is_proposed_as_is(overall):
    proposal = Proposal.model_validate(tool_call(overall=overall))
    out, band = apply_band(proposal, CFG, PERSONA, REGISTRY)
    assert out == proposal and band.action in ("execute", "execute_logged")


@pytest.mark.parametrize("overall", [0.69, 0.5])
def test_given_a_medium_confidence_tool_call_when_applied_then_it_goes_to_confirmation_mode(overall):
    out, band = apply_band(Proposal.model_validate(tool_call(overall=overall)), CFG, PERSONA, REGISTRY)
    assert isinstance(out.root, ToolCallProposal) and out.root.needs_confirmation and band.action == "confirm"


@pytest.mark.parametrize("overall", [0.49, 0.3])
def test_given_a_low_confidence_tool_call_when_applied_then_a_confirmation_question_is_generated(overall):
    out, band = apply_band(Proposal.model_validate(tool_call(overall=overall)), CFG, PERSONA, REGISTRY)
    assert isinstance(out.root, ToolCallProposal) and out.root.needs_confirmation and band.action == "ask"
    # in the words a user reads: the tool's display name and the parameters' labels, never internal names
    question = out.root.confirmation_question
    assert "「タスクの作成」" in question and "担当者: 田中" in question
    assert "chatwork_task_create" not in question and "assignee_name" not in question


@pytest.mark.parametrize("overall", [0.29, 0.0])
def test_given_a_very_low_confidence_tool_call_when_applied_then_it_is_left_for_the_guardian_to_block(
    overall,
):
    proposal = Proposal.model_validate(tool_call(overall=overall))
    out, band = apply_band(proposal, CFG, PERSONA, REGISTRY)
    assert out == proposal and band.action == "dont_know"


def test_given_text_responses_in_each_band_when_applied_then_only_low_and_very_low_change():
    results = {
        o: apply_band(Proposal.model_validate(text(overall=o)), CFG, PERSONA, REGISTRY)[0]
        for o in (0.95, 0.75, 0.55, 0.4, 0.1)
    }
    assert [results[o].output_type for o in (0.95, 0.75, 0.55)] == ["text_response"] * 3
    assert results[0.4].output_type == "clarification_needed"
    assert results[0.4].root.clarification_question == PERSONA.message("clarify_low_confidence")  # type: ignore[union-attr]
    assert results[0.1].root.text_response == PERSONA.message("too_low_confidence")  # type: ignore[union-attr]


@pytest.mark.parametrize("overall", [0.95, 0.6, 0.4, 0.1])
def test_given_a_clarification_in_any_band_when_applied_then_it_is_kept(overall):
    proposal = Proposal.model_validate(clarification(overall=overall))
    assert apply_band(proposal, CFG, PERSONA, REGISTRY)[0] == proposal
