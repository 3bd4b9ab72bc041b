"""The tool addition checklist of seed 000 §7.1b, enforced by code.

``registry_problems(registry)`` lists what is missing for each registered tool: 3–5
trigger examples, a minimum level, a danger class, a parameter model (pydantic, unknown
keys forbidden, every field described), a callable handler, keywords for the legacy
brain, a valid Anthropic ``input_schema``, what a user reads instead of internal names (a
``display_name``, a label for every field of the parameter model, a label for every value
of an enumerated field), and agreement with the seed's tables
(``TOOL_REQUIRED_LEVELS`` of §6.4.4, ``DANGEROUS_OPERATIONS`` of §5.3). The unit test
asserts the built-in registry has none; ``charter tools check`` prints them.

>>> from shared_lib.tools.builtin import builtin_registry
>>> registry_problems(builtin_registry())
[]
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel

from shared_lib.tools.converter import tool_definition, validate_input_schema
from shared_lib.tools.registry import Danger, ToolRegistry, ToolSpec

# seed 000 §6.4.4 (Authorization Gate): tools not listed need level 2
SEED_REQUIRED_LEVELS: dict[str, int] = {
    "chatwork_task_create": 1,
    "chatwork_task_complete": 1,
    "chatwork_task_search": 1,
    "save_memory": 1,
    "query_memory": 1,
    "goal_registration": 2,
    "goal_progress_report": 2,
    "view_team_tasks": 3,
    "view_team_goals": 3,
    "view_all_users": 5,
    "view_salary_info": 6,
    "change_permission": 6,
}
# seed 000 §5.3 (Guardian) DANGEROUS_OPERATIONS: (risk, action)
SEED_DANGEROUS_OPERATIONS: dict[str, tuple[Danger, str]] = {
    "send_to_all": ("high", "confirm"),
    "delete_task": ("medium", "confirm"),
    "delete_goal": ("medium", "confirm"),
    "delete_memory": ("high", "confirm"),
    "change_permission": ("high", "block"),
    "send_confidential": ("critical", "block"),
}
MIN_EXAMPLES, MAX_EXAMPLES = 3, 5
DANGERS = set(get_args(Danger))


@dataclass(frozen=True)
class Problem:
    tool: str
    code: str
    detail: str

    def __str__(self) -> str:
        return f"{self.tool}: {self.code}: {self.detail}"


def _params_problems(spec: ToolSpec) -> list[Problem]:
    model = spec.params
    if not (inspect.isclass(model) and issubclass(model, BaseModel)):
        return [Problem(spec.name, "params.missing", "no pydantic parameter model")]
    out = []
    if model.model_config.get("extra") != "forbid":
        out.append(Problem(spec.name, "params.extra_allowed", "the parameter model must forbid unknown keys"))
    for issue in validate_input_schema(tool_definition(spec)["input_schema"]):
        out.append(Problem(spec.name, "schema.invalid", issue))
    return out


def _literal_values(annotation: Any) -> list[Any]:
    """Every value of the ``Literal`` types inside an annotation (``Literal["all"] | list[str]``)."""
    if get_origin(annotation) is Literal:
        return list(get_args(annotation))
    return [v for arg in get_args(annotation) for v in _literal_values(arg)]


def display_problems(spec: ToolSpec) -> list[Problem]:
    """What a user would read as an internal name: a tool, field or enumerated value without a label."""
    out = []
    if not spec.display_name.strip():
        out.append(Problem(spec.name, "display.name_missing", "no display_name"))
    model = spec.params
    if not (inspect.isclass(model) and issubclass(model, BaseModel)):
        return out
    for name, info in model.model_fields.items():
        if not spec.parameter_display.get(name, "").strip():
            out.append(Problem(spec.name, "display.parameter_missing", f"parameter {name!r} has no label"))
        shown = spec.value_display.get(name, {})
        for value in _literal_values(info.annotation):
            if not shown.get(value, "").strip():
                out.append(
                    Problem(spec.name, "display.value_missing", f"value {value!r} of {name!r} has no label")
                )
    for name in [*spec.parameter_display, *spec.value_display]:
        if name not in model.model_fields:
            out.append(
                Problem(spec.name, "display.unknown_parameter", f"label for unknown parameter {name!r}")
            )
    return out


def spec_problems(spec: ToolSpec) -> list[Problem]:
    out: list[Problem] = []

    def need(ok: bool, code: str, detail: str) -> None:
        if not ok:
            out.append(Problem(spec.name, code, detail))

    need(bool(spec.description.strip()), "description.missing", "no description")
    need(
        MIN_EXAMPLES <= len(spec.examples) <= MAX_EXAMPLES,
        "examples.count",
        f"{len(spec.examples)} trigger examples (need {MIN_EXAMPLES}–{MAX_EXAMPLES})",
    )
    need(all(e.strip() for e in spec.examples), "examples.empty", "an empty trigger example")
    need(
        isinstance(spec.min_level, int) and 1 <= spec.min_level <= 6,
        "level.missing",
        f"minimum level {spec.min_level!r} is not 1–6",
    )
    need(
        spec.danger in DANGERS,
        "danger.missing",
        f"danger class {spec.danger!r} is not one of {sorted(DANGERS)}",
    )
    need(callable(spec.handler), "handler.missing", "no callable handler")
    need(bool(spec.keywords), "keywords.missing", "no keywords for the legacy brain")
    need(spec.timeout_seconds > 0, "timeout.invalid", "timeout must be positive")
    need(
        spec.danger_action != "confirm" or spec.requires_confirmation,
        "confirmation.inconsistent",
        "danger action 'confirm' but requires_confirmation is false",
    )
    if spec.params is not None:
        out += _params_problems(spec)
        out += display_problems(spec)
    else:
        out.append(Problem(spec.name, "params.missing", "no parameter model"))
    if spec.name in SEED_REQUIRED_LEVELS:
        need(
            spec.min_level == SEED_REQUIRED_LEVELS[spec.name],
            "level.seed_mismatch",
            f"level {spec.min_level} but seed §6.4.4 says {SEED_REQUIRED_LEVELS[spec.name]}",
        )
    if spec.name in SEED_DANGEROUS_OPERATIONS:
        risk, action = SEED_DANGEROUS_OPERATIONS[spec.name]
        need(
            (spec.danger, spec.danger_action) == (risk, action),
            "danger.seed_mismatch",
            f"{spec.danger}/{spec.danger_action} but DANGEROUS_OPERATIONS says {risk}/{action}",
        )
    return out


def registry_problems(registry: ToolRegistry) -> list[Problem]:
    return [p for spec in registry for p in spec_problems(spec)]
