"""Tool definitions sent to Claude: the registry's tools plus the ``submit_proposal`` decision tool.

The registry tools come from ``shared_lib.tools.converter.anthropic_tool_definitions``
(seed 000 §7.1b, the one conversion). The decision tool's ``tool_name`` is an enum of
the enabled tools, so an unknown name is already off-schema for the model. The last
tool carries the cache breakpoint: the tool list is the start of the cached prefix (tools, then system).
"""

from __future__ import annotations

from typing import Any

from shared_lib.tools.converter import anthropic_tool_definitions
from shared_lib.tools.registry import ToolRegistry
from shared_lib.turn.proposal import proposal_json_schema

DECISION_TOOL = "submit_proposal"
CRITIQUE_TOOL = "submit_critique"
CACHE = {"type": "ephemeral"}


def decision_tool(tool_names: list[str]) -> dict[str, Any]:
    schema = proposal_json_schema()
    call = schema["properties"]["tool_calls"]["items"]["properties"]
    if tool_names:
        call["tool_name"] = {"type": "string", "enum": sorted(tool_names)}
    return {
        "name": DECISION_TOOL,
        "description": "あなたの提案（tool_call / text_response / clarification_needed）を、思考過程と確信度つきで提出する。"
        "実行の可否・権限・保存内容・記録内容はあなたではなくチャーターが決める。",
        "input_schema": schema,
    }


def critique_tool() -> dict[str, Any]:
    return {
        "name": CRITIQUE_TOOL,
        "description": "判断の品質評価を提出する（記録のみ。判断は変わらない）。",
        "input_schema": {
            "type": "object",
            "properties": {
                "appropriate": {"type": "boolean"},
                "improvements": {"type": "string"},
                "risks": {"type": "string"},
            },
            "required": ["appropriate"],
        },
    }


def anthropic_tools(registry: ToolRegistry) -> list[dict[str, Any]]:
    """Registry tools then the decision tool; the last one carries the cache breakpoint."""
    tools = anthropic_tool_definitions(registry)
    tools.append(decision_tool([t["name"] for t in tools]))
    tools[-1] = {**tools[-1], "cache_control": dict(CACHE)}
    return tools
