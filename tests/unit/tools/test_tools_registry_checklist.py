"""The tool addition checklist of seed 000 §7.1b, enforced by code: the built-in registry
passes it, and a tool that lacks examples, a level, a danger class, a parameter model or a
handler fails it (as data: the file does not load; as code: the checklist names it)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from pydantic import BaseModel

from shared_lib.errors import ConfigError
from shared_lib.tools.builtin import HANDLERS
from shared_lib.tools.catalog import TOOLS_FILE, load_registry
from shared_lib.tools.checklist import SEED_DANGEROUS_OPERATIONS, SEED_REQUIRED_LEVELS, registry_problems
from shared_lib.tools.registry import DEFAULT_MIN_LEVEL, ToolRegistry
from shared_lib.wiring.features import tool_bindings, tool_registry

# the handlers the product binds: the built-ins and those the features' manifests contribute
BOUND = {**HANDLERS, **tool_bindings()}

ISSUE_TOOLS = {
    "chatwork_task_create",
    "chatwork_task_complete",
    "chatwork_task_search",
    "goal_registration",
    "goal_progress_report",
    "save_memory",
    "query_memory",
    "knowledge_search",
    "announce",
    "send_to_all",
    "delete_task",
    "delete_goal",
    "delete_memory",
    "view_team_tasks",
    "view_team_goals",
    "view_all_users",
    "change_permission",
    "view_salary_info",  # seed 000 §6.4.4 (level 6), added by issue 18
    "propose_skill",  # seed 001 §23.4 (a draft only), added by issue 22
    "delegate_task",  # seed 001 §15 (sub-agents), added by issue 22
    "schedule_heartbeat_task",  # seed 001 §17 (HEARTBEAT.md periodic tasks), added by issue 38
}


def codes(registry: ToolRegistry) -> set[tuple[str, str]]:
    return {(p.tool, p.code) for p in registry_problems(registry)}


def test_given_the_builtin_registry_when_checked_then_every_tool_passes_the_checklist():
    registry = tool_registry()
    assert set(registry.names()) == ISSUE_TOOLS
    assert registry_problems(registry) == []


def test_given_the_builtin_registry_then_levels_and_danger_classes_follow_the_seed_tables():
    registry = tool_registry()
    for spec in registry:
        assert spec.min_level == SEED_REQUIRED_LEVELS.get(spec.name, DEFAULT_MIN_LEVEL), spec.name
        if spec.name in SEED_DANGEROUS_OPERATIONS:
            assert (spec.danger, spec.danger_action) == SEED_DANGEROUS_OPERATIONS[spec.name]
    assert registry.min_level("no_such_tool") == DEFAULT_MIN_LEVEL
    assert registry.get("change_permission").danger_action == "block"


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"examples": ("only one",)}, "examples.count"),
        ({"examples": ("a", "b", "c", "d", "e", "f")}, "examples.count"),
        ({"min_level": 0}, "level.missing"),
        ({"danger": "unknown"}, "danger.missing"),
        ({"params": None}, "params.missing"),
        ({"handler": None}, "handler.missing"),
        ({"keywords": ()}, "keywords.missing"),
        ({"min_level": 3}, "level.seed_mismatch"),
        ({"requires_confirmation": False, "danger_action": "confirm"}, "confirmation.inconsistent"),
    ],
)
def test_given_a_tool_missing_a_checklist_item_when_checked_then_the_problem_is_named(change, code):
    # GIVEN the built-in save_memory with one checklist item broken
    spec = replace(tool_registry().get("save_memory"), **change)
    # WHEN the checklist runs THEN it names that tool and that item
    assert ("save_memory", code) in codes(ToolRegistry([spec]))


def test_given_a_parameter_model_that_allows_unknown_keys_or_undescribed_fields_then_it_fails():
    class Loose(BaseModel):
        text: str

    spec = replace(tool_registry().get("save_memory"), params=Loose)
    found = codes(ToolRegistry([spec]))
    assert ("save_memory", "params.extra_allowed") in found
    assert ("save_memory", "schema.invalid") in found  # "text: no description"


def test_given_a_dangerous_seed_operation_with_the_wrong_class_then_it_fails():
    spec = replace(tool_registry().get("delete_memory"), danger="medium")
    assert ("delete_memory", "danger.seed_mismatch") in codes(ToolRegistry([spec]))


def _write_catalogue(tmp_path: Path, mutate) -> Path:
    data = json.loads(TOOLS_FILE.read_text(encoding="utf-8"))
    mutate(data["tools"][0])
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


@pytest.mark.parametrize("missing", ["min_level", "danger", "effect", "trigger_examples", "handler"])
def test_given_a_registry_entry_without_a_required_field_when_loaded_then_loading_fails(tmp_path, missing):
    path = _write_catalogue(tmp_path, lambda entry: entry.pop(missing))
    with pytest.raises(ConfigError, match=missing):
        load_registry(BOUND, path)


def test_given_an_entry_naming_an_unbound_handler_when_loaded_then_loading_fails(tmp_path):
    path = _write_catalogue(tmp_path, lambda entry: entry.update(handler="no_such_handler"))
    with pytest.raises(ConfigError, match="no_such_handler"):
        load_registry(BOUND, path)


def test_given_an_entry_with_an_unknown_key_when_loaded_then_loading_fails(tmp_path):
    path = _write_catalogue(tmp_path, lambda entry: entry.update(surprise=True))
    with pytest.raises(ConfigError):
        load_registry(BOUND, path)


def test_given_a_disabled_entry_when_loaded_then_it_is_registered_but_not_enabled(tmp_path):
    path = _write_catalogue(tmp_path, lambda entry: entry.update(enabled=False))
    registry = load_registry(BOUND, path)
    first = json.loads(path.read_text(encoding="utf-8"))["tools"][0]["name"]
    assert first in registry and first not in {s.name for s in registry.enabled()}


def test_given_every_bound_handler_then_each_is_used_by_exactly_one_entry():
    entries = json.loads(TOOLS_FILE.read_text(encoding="utf-8"))["tools"]
    assert sorted(e["handler"] for e in entries) == sorted(BOUND)


def test_given_every_registered_tool_then_it_and_every_field_of_its_parameter_model_read_in_japanese():
    # GIVEN whatever the built-in registry holds (a tool added later is covered too)
    registry = tool_registry()
    for spec in registry:
        # THEN the tool and each parameter have a label that is not the internal name
        assert spec.display_name and spec.display_name != spec.name, spec.name
        assert registry.display_name(spec.name) == spec.display_name
        for field in spec.params.model_fields:
            label = registry.parameter_label(spec.name, field)
            assert label == spec.parameter_display.get(field) and label != field, (spec.name, field)
    assert registry.display_name("announce") == "アナウンスの送信"
    assert registry.parameter_label("chatwork_task_create", "assignee_name") == "担当者"
    assert registry.value_label("save_memory", "category", "preference") == "好み"


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"display_name": ""}, "display.name_missing"),
        (
            {"parameter_display": {"content": "覚える内容", "subject": "記憶の対象"}},
            "display.parameter_missing",
        ),
        (
            {"value_display": {"category": {"preference": "好み", "fact": "事実", "person": "人物"}}},
            "display.value_missing",
        ),
        (
            {"parameter_display": {"content": "a", "category": "b", "subject": "c", "nothing": "d"}},
            "display.unknown_parameter",
        ),
    ],
)
def test_given_a_tool_without_a_display_label_when_checked_then_the_problem_is_named(change, code):
    # GIVEN save_memory with a display label removed (or one for a field it does not have)
    spec = replace(tool_registry().get("save_memory"), **change)
    # WHEN the checklist runs THEN it names the gap
    assert ("save_memory", code) in codes(ToolRegistry([spec]))


def test_given_an_entry_without_a_display_name_when_loaded_then_loading_fails(tmp_path):
    path = _write_catalogue(tmp_path, lambda entry: entry.pop("display_name"))
    with pytest.raises(ConfigError, match="display_name"):
        load_registry(BOUND, path)
