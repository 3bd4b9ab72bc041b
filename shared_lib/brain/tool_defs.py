"""Registry entries -> Anthropic tool definitions (seed 000 §7.1b conversion)."""

from __future__ import annotations

from typing import Any

from shared_lib.proposal import proposal_json_schema
from shared_lib.tools.registry import ToolRegistry, ToolSpec

DECISION_TOOL = "submit_proposal"


def tool_definition(spec: ToolSpec) -> dict[str, Any]:
    schema = spec.params.model_json_schema()
    schema.pop("title", None)
    examples = "\n".join(f"- 「{e}」" for e in spec.examples)
    return {"name": spec.name, "description": f"{spec.description}\n使用例:\n{examples}", "input_schema": schema}


def decision_tool() -> dict[str, Any]:
    return {"name": DECISION_TOOL,
            "description": "あなたの提案（tool_call / text_response / clarification_needed）を、思考過程と確信度つきで提出する。"
                           "実行の可否・権限はあなたではなくチャーターが決める。",
            "input_schema": proposal_json_schema()}


def anthropic_tools(registry: ToolRegistry) -> list[dict[str, Any]]:
    """Registry tools then the decision tool; the last one carries the cache breakpoint."""
    tools = [tool_definition(s) for s in registry.enabled()] + [decision_tool()]
    tools[-1] = {**tools[-1], "cache_control": {"type": "ephemeral"}}
    return tools
