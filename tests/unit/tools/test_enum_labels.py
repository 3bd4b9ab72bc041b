"""Enumerated parameters take their display labels: 「人物」 is ``person`` for every tool."""

from __future__ import annotations

import pytest

from shared_lib.brain.validation import validate_proposal
from shared_lib.wiring.features import tool_registry

REGISTRY = tool_registry()
ENUMS = [
    (spec.name, param, value, label)
    for spec in REGISTRY.enabled()
    for param, table in spec.value_display.items()
    for value, label in table.items()
]


def _proposal(tool: str, parameters: dict) -> dict:
    return {
        "output_type": "tool_call",
        "reasoning": {"intent_understanding": "依頼を理解した", "tool_selection_reason": "このツールが合う"},
        "confidence": {"overall": 0.9},
        "tool_calls": [{"tool_name": tool, "parameters": parameters}],
    }


def test_given_the_builtin_tools_then_there_are_enumerated_values_with_labels():
    assert len(ENUMS) > 10 and any(t == "save_memory" and lab == "人物" for t, _, _, lab in ENUMS)


@pytest.mark.parametrize(("tool", "param", "value", "label"), ENUMS)
def test_given_an_enum_written_as_its_label_when_canonicalised_then_it_is_the_value(
    tool, param, value, label
):
    # GIVEN the label a user reads (in full-width or with blanks around it)
    for written in (label, f" {label} ", f"「{label}」", value.upper()):
        # WHEN the parameters are read THEN the value the parameter model accepts
        assert REGISTRY.canonical_parameters(tool, {param: written})[param] == value


def test_given_save_memory_with_the_category_jinbutsu_when_validated_then_it_is_person():
    proposal = validate_proposal(
        _proposal("save_memory", {"content": "田中さんは営業部長", "category": "人物"}), REGISTRY
    )
    assert proposal.root.tool_calls[0].parameters["category"] == "person"


def test_given_an_unknown_word_for_an_enum_when_canonicalised_then_it_is_left_to_the_model_to_refuse():
    assert REGISTRY.canonical_parameters("save_memory", {"category": "ペット"}) == {"category": "ペット"}
