"""Registry entries -> Anthropic tool definitions (seed 000 §7.1b)."""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from shared_lib.tools.converter import (
    ToolConversionConfig,
    anthropic_tool_definitions,
    input_schema,
    tool_definition,
    validate_input_schema,
)
from shared_lib.tools.registry import ToolRegistry
from shared_lib.wiring.features import tool_registry


def _walk(node):
    """Every schema node: a ``properties`` map's keys are parameter names, not keywords."""
    if isinstance(node, dict):
        yield node
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                for sub in value.values():
                    yield from _walk(sub)
            else:
                yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


def test_given_the_registry_when_converted_then_every_enabled_tool_has_name_description_and_schema():
    tools = anthropic_tool_definitions(tool_registry())
    assert len(tools) == len(tool_registry())
    for tool in tools:
        assert set(tool) == {"name", "description", "input_schema"}
        assert validate_input_schema(tool["input_schema"]) == []
        assert not any("title" in node or "$ref" in node for node in _walk(tool["input_schema"]))


def test_given_a_tool_when_converted_then_its_examples_are_appended_to_the_description():
    tool = tool_definition(tool_registry().get("chatwork_task_create"))
    assert tool["description"].startswith("ChatWorkで指定した担当者にタスクを作成する。")
    assert "【使用例】\n- 「田中さんに資料作成のタスクを追加して、期限は明日」" in tool["description"]


def test_given_max_examples_when_converted_then_at_most_that_many_are_shown():
    spec = replace(tool_registry().get("save_memory"), examples=tuple(f"例{i}" for i in range(8)))
    described = tool_definition(spec, ToolConversionConfig(max_examples=2))["description"]
    assert "「例1」" in described and "「例2」" not in described
    assert (
        "【使用例】" not in tool_definition(spec, ToolConversionConfig(include_examples=False))["description"]
    )


def test_given_the_task_creation_model_when_converted_then_types_required_and_optionals_are_plain():
    schema = tool_definition(tool_registry().get("chatwork_task_create"))["input_schema"]
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert schema["required"] == ["body", "assignee_name"]
    assert schema["properties"]["limit_date"]["type"] == "string"  # Optional[str] -> string, not required
    assert "default" not in schema["properties"]["limit_date"]
    assert schema["properties"]["body"]["maxLength"] == 1000


def test_given_enums_and_defaults_when_converted_then_they_are_kept():
    schema = tool_definition(tool_registry().get("chatwork_task_search"))["input_schema"]
    status = schema["properties"]["status"]
    assert status == {
        "default": "open",
        "description": "タスクの状態",
        "enum": ["open", "done", "all"],
        "type": "string",
    }
    assert schema["required"] == []
    recipients = tool_definition(tool_registry().get("announce"))["input_schema"]["properties"]["recipients"]
    assert recipients["default"] == "all"
    assert recipients["anyOf"] == [
        {"type": "string", "enum": ["all"]},
        {"items": {"type": "string"}, "type": "array"},
    ]


def test_given_a_model_with_a_nested_model_when_converted_then_the_reference_is_inlined():
    class Item(BaseModel):
        model_config = ConfigDict(extra="forbid")
        label: str = Field(description="label")

    class Outer(BaseModel):
        model_config = ConfigDict(extra="forbid")
        item: Item = Field(description="an item")
        mode: Literal["a", "b"] = Field("a", description="mode")

    schema = input_schema(Outer)
    assert schema["properties"]["item"]["properties"]["label"]["type"] == "string"
    assert validate_input_schema(schema) == []


def test_given_invalid_schemas_when_validated_then_each_problem_is_reported():
    assert validate_input_schema({"type": "array"}) == ["input_schema: type must be object"]
    problems = validate_input_schema(
        {
            "type": "object",
            "properties": {
                "a": {"description": "x"},
                "b": {"type": "array", "description": "y"},
                "c": {"type": "string", "description": "z", "enum": ["p"], "default": "q"},
            },
            "required": ["zz"],
        }
    )
    assert any("required" in p for p in problems)
    assert any(p.startswith("a: missing or unknown type") for p in problems)
    assert any(p.startswith("b: array without items") for p in problems)
    assert any(p.startswith("c: default") for p in problems)


def test_given_a_disabled_tool_or_an_invalid_schema_when_converted_then_it_is_left_out():
    class Undescribed(BaseModel):
        model_config = ConfigDict(extra="forbid")
        text: str

    base = tool_registry()
    registry = ToolRegistry(
        [
            replace(base.get("save_memory"), enabled=False),
            replace(base.get("query_memory"), params=Undescribed),
            base.get("knowledge_search"),
        ]
    )
    assert [t["name"] for t in anthropic_tool_definitions(registry)] == ["knowledge_search"]


def test_given_a_proposal_per_turn_then_each_parameter_model_is_converted_once_and_a_caller_gets_its_own_copy(
    monkeypatch,
):
    """Every proposal request carries every tool: pydantic's schema generation runs once per class
    (it was ~1 ms a tool, every step of every turn), and a caller changing what it got changes
    nothing for the next."""

    class Fresh(BaseModel):
        model_config = ConfigDict(extra="forbid")
        title: str = Field(description="件名（例: 見積書の作成📄）")
        when: Literal["今日", "明日"] = Field(default="今日", description="いつ")

    base = tool_registry()
    registry = ToolRegistry([replace(base.get("save_memory"), params=Fresh), base.get("knowledge_search")])
    generated: list[str] = []
    original = BaseModel.model_json_schema.__func__

    def counting(cls, *args, **kwargs):
        generated.append(cls.__name__)
        return original(cls, *args, **kwargs)

    monkeypatch.setattr(BaseModel, "model_json_schema", classmethod(counting))
    first = anthropic_tool_definitions(registry)
    first[0]["input_schema"]["properties"]["title"]["description"] = "changed by a caller"
    first[0]["input_schema"]["required"].append("when")
    for _ in range(5):
        again = anthropic_tool_definitions(registry)
    assert generated.count("Fresh") == 1
    assert again[0]["input_schema"]["properties"]["title"]["description"] == "件名（例: 見積書の作成📄）"
    assert again[0]["input_schema"]["required"] == ["title"]
    assert input_schema(Fresh) == again[0]["input_schema"] and input_schema(Fresh) is not input_schema(Fresh)


def test_given_a_parameter_named_title_then_the_model_is_offered_it():
    """``title`` is a JSON Schema keyword pydantic writes on every node, and a parameter name too
    (the goal's 「目標の内容」): only the keyword is dropped."""
    goal = tool_definition(tool_registry().get("goal_registration"))["input_schema"]
    assert goal["properties"]["title"]["type"] == "string"
    assert goal["properties"]["title"]["maxLength"] == 200
    assert not any("title" in node for node in _walk(goal))
