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
import json
import logging
from dataclasses import dataclass
from functools import lru_cache
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
    out = {k: _resolve(v, defs) for k, v in node.items() if k not in ("title", "$defs", "properties")}
    if isinstance(node.get("properties"), dict):  # parameter names, not keywords: a "title" parameter stays
        out["properties"] = {name: _resolve(sub, defs) for name, sub in node["properties"].items()}
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
    """The flattened tool input schema of ``model``: a fresh copy each call (callers may change it)."""
    schema: dict[str, Any] = json.loads(_converted(model)[0])
    return schema


def schema_problems(model: type[BaseModel]) -> tuple[str, ...]:
    """What ``validate_input_schema`` finds wrong in ``model``'s input schema (none for a valid one)."""
    return _converted(model)[1]


@lru_cache(maxsize=1024)
def _converted(model: type[BaseModel]) -> tuple[str, tuple[str, ...]]:
    """A parameter model's schema (as JSON text) and its problems, once per class: pydantic's JSON
    Schema generation is about a millisecond a tool, and every proposal request carries every tool,
    so converting them anew each turn cost the brain ~15 ms of CPU a turn. A class's schema cannot
    change once it is defined; an organisation's skill has a class of its own, so it has its own entry
    (the cache holds the class, so its id is never reused while the entry lives)."""
    raw = model.model_json_schema()
    schema: dict[str, Any] = _resolve(raw, raw.get("$defs", {}))
    schema["type"] = "object"
    schema.setdefault("properties", {})
    schema["required"] = list(schema.get("required", []))
    return json.dumps(schema, ensure_ascii=False), tuple(validate_input_schema(schema))


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
        problems = schema_problems(spec.params) if cfg.validate_schema else ()
        if problems:
            log.error("tool %s left out of the LLM's tools: %s", spec.name, "; ".join(problems))
            continue
        tools.append(tool)
    return tools
