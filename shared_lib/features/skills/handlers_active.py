"""An organisation's approved skills as registry entries (seed 001 §23.5).

Each active approved version becomes a ``ToolSpec`` named ``skill_<name>``: effect ``read`` (a skill
never writes; its view is read-only), its level (``SkillSpec.level``: at least that of every
collection it reads), labels and trigger examples from its spec, a
parameter model built from its ``input_schema``, and a handler that runs the version in the
sandbox with the call's parameters (a sandbox failure is a ``SkillRunFailed``, which the executor
turns into a tool error the persona phrases). ``registry_for`` is the registry a turn of that
organisation uses: the built-ins plus these, the skills re-read at most every
``registry_cache_seconds`` (``config/skills.json``), so a rollback is gone by the next turn.
"""

from __future__ import annotations

import logging
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from shared_lib.errors import CharterError, ConfigError
from shared_lib.features.skills.state.config import SandboxConfig, packaged
from shared_lib.features.skills.state.sandbox import run_skill
from shared_lib.features.skills.state.spec import SkillSpec
from shared_lib.features.skills.store import ActiveSkill, active_skills
from shared_lib.ports import Store, Transaction
from shared_lib.tools.registry import ToolContext, ToolRegistry, ToolSpec

log = logging.getLogger(__name__)
_SIMPLE: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool}


class SkillRunFailed(CharterError):
    """The sandbox refused or the skill failed: ``kind`` is the ``SandboxResult.error_kind``."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


def _annotation(prop: dict[str, Any]) -> Any:
    if prop.get("enum"):
        return Literal[tuple(prop["enum"])]
    kind = prop.get("type")
    if kind == "array":
        return list[_annotation(prop.get("items", {}))]  # type: ignore[misc]
    if kind == "object":
        return dict[str, Any]
    return _SIMPLE.get(str(kind), Any)


def params_model(spec: SkillSpec) -> type[BaseModel]:
    """The skill's parameter model (unknown keys forbidden), from its declared schema."""
    props: dict[str, dict[str, Any]] = spec.input_schema.get("properties", {})
    required = set(spec.input_schema.get("required", []))
    fields: dict[str, Any] = {}
    for name, prop in props.items():
        kind = _annotation(prop)
        if name in required:
            fields[name] = (kind, Field(description=prop["description"]))
        else:
            fields[name] = (kind | None, Field(default=prop.get("default"), description=prop["description"]))
    model: type[BaseModel] = create_model(  # type: ignore[call-overload]
        f"Skill_{spec.name}", __config__=ConfigDict(extra="forbid"), **fields
    )
    return model


def _handler(spec: SkillSpec, config: SandboxConfig) -> Any:
    def handle(params: BaseModel, ctx: ToolContext, txn: Transaction | None) -> dict[str, Any]:
        result = run_skill(
            spec, params.model_dump(mode="json", exclude_none=True), ctx.store, ctx.org_id, config
        )
        if not result.ok:
            raise SkillRunFailed(
                f"skill {spec.name}: {result.error_kind}: {result.error}", str(result.error_kind)
            )
        return {"skill": spec.display_name, "result": result.output}

    return handle


_built: dict[tuple[int, str], ToolSpec] = {}
MAX_BUILT = 500


def _tool_spec(spec: SkillSpec, version: int, config: SandboxConfig) -> ToolSpec:
    # one entry per (version, spec): its parameter model is built once per process
    key = (version, spec.model_dump_json())
    if key not in _built:
        if len(_built) >= MAX_BUILT:
            _built.clear()
        _built[key] = _build(spec, version, config)
    return _built[key]


def _build(spec: SkillSpec, version: int, config: SandboxConfig) -> ToolSpec:
    return ToolSpec(
        name=spec.tool_name,
        description=spec.description,
        examples=tuple(spec.trigger_examples),
        params=params_model(spec),
        handler=_handler(spec, config),
        min_level=spec.level,  # raised to the level of what it reads
        danger="none",
        effect="read",
        keywords=tuple(spec.keywords),
        timeout_seconds=config.timeout_seconds + 2,  # the sandbox's own wall clock ends it first
        tags=("skill", f"v{version}"),
        display_name=spec.display_name,
        parameter_display=dict(spec.parameter_display),
        value_display={k: dict(v) for k, v in spec.value_display.items()},
    )


def skill_specs(skills: list[ActiveSkill], config: SandboxConfig | None = None) -> list[ToolSpec]:
    cfg = config or sandbox_config()
    return [_tool_spec(s.spec, s.version, cfg) for s in skills]


def sandbox_config() -> SandboxConfig:
    return packaged()


def registry_for(base: ToolRegistry, store: Store, org_id: str) -> ToolRegistry:
    """The registry of a turn of ``org_id``: ``base`` and the organisation's approved skills."""
    if not org_id:
        return base
    cfg = sandbox_config()
    skills = active_skills(store, org_id, cache_seconds=cfg.registry_cache_seconds)
    specs = [s for s in skill_specs(skills, cfg) if s.name not in base]
    if not specs:
        return base
    try:
        return base.with_specs(specs)
    except ConfigError:  # two skills with one name cannot happen (one document per name)
        log.exception("skills of %s left out of the registry", org_id)
        return base
