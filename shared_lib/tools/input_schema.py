"""The JSON Schema rules of a tool's ``input_schema``, shared by the registry and the skills.

``tools/converter`` checks the schemas it derives from parameter models with these rules, and a
skill's declared schema (seed 001 §23) is checked with the same ones; ``skills/`` never imports
``tools/``, so the rules live here, the lower room.

>>> validate_input_schema({"type": "object", "properties": {"n": {"type": "integer", "description": "数"}}})
[]
>>> value_problems({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}, {})
['n: required']
"""

from __future__ import annotations

from typing import Any

JSON_TYPES = {"string", "integer", "number", "boolean", "array", "object", "null"}
PY_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}


def json_type(value: Any) -> str:
    for name, types in PY_TYPES.items():
        if isinstance(value, types) and not (name in ("integer", "number") and isinstance(value, bool)):
            return name
    return "string"


def _check_property(name: str, prop: Any, problems: list[str]) -> None:
    if not isinstance(prop, dict):
        problems.append(f"{name}: not an object")
        return
    if "anyOf" in prop:
        for i, option in enumerate(prop["anyOf"]):
            _check_property(f"{name}.anyOf[{i}]", option, problems)
        return
    kind = prop.get("type")
    if kind not in JSON_TYPES:
        problems.append(f"{name}: missing or unknown type {kind!r}")
        return
    if "$ref" in prop:
        problems.append(f"{name}: unresolved $ref")
    if kind == "array":
        if "items" not in prop:
            problems.append(f"{name}: array without items")
        else:
            _check_property(f"{name}[]", prop["items"], problems)
    if kind == "object" and "properties" in prop:
        for sub, sub_prop in prop["properties"].items():
            _check_property(f"{name}.{sub}", sub_prop, problems)
    enum = prop.get("enum")
    if enum is not None and (not enum or any(json_type(v) != kind and kind != "number" for v in enum)):
        problems.append(f"{name}: enum values do not match type {kind}")
    if "default" in prop:
        default = prop["default"]
        if enum is not None and default not in enum:
            problems.append(f"{name}: default {default!r} is not one of the enum")
        elif kind in PY_TYPES and not isinstance(default, PY_TYPES[kind]):
            problems.append(f"{name}: default {default!r} is not a {kind}")


def validate_input_schema(schema: Any) -> list[str]:
    """Problems that would make the schema unusable as a tool ``input_schema`` (empty: valid)."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return ["input_schema: type must be object"]
    props = schema.get("properties")
    if not isinstance(props, dict):
        return ["input_schema: properties missing"]
    problems: list[str] = []
    required = schema.get("required", [])
    if not isinstance(required, list) or not set(required) <= set(props):
        problems.append(f"input_schema: required {required!r} names unknown properties")
    for name, prop in props.items():
        if not isinstance(prop, dict) or not prop.get("description"):
            problems.append(f"{name}: no description")
        _check_property(name, prop, problems)
    return problems


def _type_matches(kind: Any, value: Any) -> bool:
    if kind == "null":
        return value is None
    if kind == "number":
        return json_type(value) in ("integer", "number")
    return kind in PY_TYPES and json_type(value) == kind


def value_problems(schema: dict[str, Any], value: Any, name: str = "input") -> list[str]:
    """Where ``value`` does not fit ``schema`` (the subset above: types, enums, required, no
    unknown property of an object that lists its properties); empty when it fits."""
    kind = schema.get("type")
    if "anyOf" in schema:
        options = [value_problems(o, value, name) for o in schema["anyOf"]]
        return [] if any(not o for o in options) else [f"{name}: matches no option"]
    if kind is not None and not _type_matches(kind, value):
        return [f"{name}: not a {kind}"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{name}: not one of {schema['enum']!r}"]
    problems: list[str] = []
    if kind == "array" and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            problems += value_problems(schema["items"], item, f"{name}[{i}]")
    if kind == "object" and isinstance(schema.get("properties"), dict):
        props: dict[str, Any] = schema["properties"]
        top = name == "input"
        problems += [
            f"{key}: required" if top else f"{name}.{key}: required"
            for key in schema.get("required", [])
            if key not in value
        ]
        for key, item in value.items():
            label = key if top else f"{name}.{key}"
            if key not in props:
                problems.append(f"{label}: unknown")
            else:
                problems += value_problems(props[key], item, label)
    return problems
