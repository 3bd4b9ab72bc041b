"""Registry entries -> Anthropic tool definitions (seed 000 §7.1b conversion).

| registry | Anthropic tool | note |
|---|---|---|
| ``name`` | ``name`` | as is |
| ``description`` + ``examples`` | ``description`` | up to ``max_examples`` examples appended |
| parameter model | ``input_schema`` | JSON Schema: types, enums, defaults, ``required`` |
| ``enabled`` | — | disabled entries are not converted |
| level, danger, confirmation | — | for the guardian and the gate, never shown to the model |

The parameter model is the single source of the schema: pydantic's JSON Schema is
flattened into the plain subset tool inputs use (``$ref`` inlined, ``Optional`` turned
into the bare type, ``const`` into a one-value ``enum``, titles dropped) and validated;
an entry whose schema is invalid is not offered to the model (and fails the checklist).

>>> from shared_lib.tools.builtin import builtin_registry
>>> tool = tool_definition(builtin_registry().get("save_memory"))
>>> tool["input_schema"]["required"]
['content']
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from shared_lib.tools.input_schema import json_type, validate_input_schema
from shared_lib.tools.registry import ToolRegistry, ToolSpec

__all__ = [
    "ToolConversionConfig",
    "anthropic_tool_definitions",
    "describe",
    "input_schema",
    "tool_definition",
    "validate_input_schema",
]
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ToolConversionConfig:
    include_examples: bool = True
    max_examples: int = 5
    validate_schema: bool = True


def _resolve(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_resolve(x, defs) for x in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = defs[str(node["$ref"]).rsplit("/", 1)[-1]]
        merged = {**copy.deepcopy(target), **{k: v for k, v in node.items() if k != "$ref"}}
        return _resolve(merged, defs)
    out = {k: _resolve(v, defs) for k, v in node.items() if k not in ("title", "$defs")}
    if "const" in out:
        out["enum"] = [out.pop("const")]
        out.setdefault("type", json_type(out["enum"][0]))
    options = out.get("anyOf")
    if isinstance(options, list):
        non_null = [o for o in options if o.get("type") != "null"]
        if len(non_null) == 1 and len(non_null) < len(options):  # Optional[X] -> X, not required
            out.pop("anyOf")
            out = {**non_null[0], **out}
            if out.get("default", 0) is None:
                out.pop("default")
    return out


def input_schema(model: type[BaseModel]) -> dict[str, Any]:
    raw = model.model_json_schema()
    schema: dict[str, Any] = _resolve(raw, raw.get("$defs", {}))
    schema["type"] = "object"
    schema.setdefault("properties", {})
    schema["required"] = list(schema.get("required", []))
    return schema


def describe(spec: ToolSpec, config: ToolConversionConfig) -> str:
    lines = [spec.description.strip()]
    if config.include_examples and spec.examples:
        lines.append("\n【使用例】")
        lines += [f"- 「{ex}」" for ex in spec.examples[: config.max_examples]]
    return "\n".join(lines)


def tool_definition(spec: ToolSpec, config: ToolConversionConfig | None = None) -> dict[str, Any]:
    cfg = config or ToolConversionConfig()
    return {"name": spec.name, "description": describe(spec, cfg), "input_schema": input_schema(spec.params)}


def anthropic_tool_definitions(
    registry: ToolRegistry, config: ToolConversionConfig | None = None
) -> list[dict[str, Any]]:
    """Every enabled tool as an Anthropic tool definition; invalid schemas are left out (logged)."""
    cfg = config or ToolConversionConfig()
    tools = []
    for spec in registry.enabled():
        tool = tool_definition(spec, cfg)
        problems = validate_input_schema(tool["input_schema"]) if cfg.validate_schema else []
        if problems:
            log.error("tool %s left out of the LLM's tools: %s", spec.name, "; ".join(problems))
            continue
        tools.append(tool)
    return tools
