"""The effective policy of one decision: configuration + tool registry + extra teachings.

The registry's danger classes are merged with the configured dangerous-operations table
(the configuration wins when it names the tool). ``version`` is a stable digest of
everything decisions depend on; a pending confirmation records it, and an approval given
under another version is re-checked (a changed policy means a new confirmation).

>>> from shared_lib.tools.builtin import builtin_registry
>>> p = Policy.build(load_policy_config(), builtin_registry())
>>> p.danger("change_permission").action, p.version.startswith("1-")
('block', True)
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from shared_lib.policy.authorization import required_level
from shared_lib.policy.config import DangerRule, PolicyConfig, load_policy_config
from shared_lib.policy.reasons import GUARDIAN_REASONS
from shared_lib.policy.teachings import Teaching
from shared_lib.tools.registry import ToolRegistry
from shared_lib.turn.decisions import Verdict


@dataclass(frozen=True)
class Policy:
    config: PolicyConfig
    registry: ToolRegistry | None
    teachings: tuple[Teaching, ...]
    version: str

    @classmethod
    def build(
        cls,
        config: PolicyConfig | None = None,
        registry: ToolRegistry | None = None,
        extra_teachings: Iterable[Teaching] = (),
    ) -> Policy:
        cfg = config or load_policy_config()
        extra = tuple(extra_teachings)
        base = _base(cfg, registry)
        return cls(
            config=base.shown,  # its messages name tools as a user reads them
            registry=registry,
            teachings=(*cfg.teachings, *extra),
            version=base.plain_version if not extra else base.version_with(extra),
        )

    def danger(self, tool_name: str) -> DangerRule | None:
        """The dangerous-operation rule of a tool: the configuration's entry, else the registry's."""
        if tool_name in self.config.dangerous_operations:
            return self.config.dangerous_operations[tool_name]
        spec = self.registry.get(tool_name) if self.registry is not None else None
        if spec is None or (spec.danger == "none" and spec.danger_action is None):
            return None
        return DangerRule.model_construct(risk=spec.danger, action=spec.danger_action)

    def requires_confirmation(self, tool_name: str) -> bool:
        spec = self.registry.get(tool_name) if self.registry is not None else None
        return bool(spec and spec.requires_confirmation)

    def irreversible(self, tool_name: str) -> bool:
        """Deletions and messages sent to others cannot be taken back (seed 002 §6.3 取り消し可否)."""
        deletes = any(re.search(p, tool_name) for p in self.config.parameters.delete_tool_patterns)
        return deletes or self.config.security.sends_out(tool_name)

    def describe(self, tool_name: str) -> tuple[str, bool]:
        """(description, writes) of a tool for the confirmation message."""
        spec = self.registry.get(tool_name) if self.registry is not None else None
        first_line = (
            spec.description.strip().splitlines()[0] if spec and spec.description.strip() else tool_name
        )
        return (first_line, spec.writes) if spec else (tool_name, True)

    def verdict(
        self,
        code: str,
        *,
        details: dict[str, Any] | None = None,
        parameters: dict[str, Any] | None = None,
        **values: Any,
    ) -> Verdict:
        """The verdict of a catalogued reason code, with its catalogue message."""
        reason = GUARDIAN_REASONS[code]
        message = self.config.message(code, **values)
        info = {"policy_version": self.version, **(details or {})}
        if reason.action == "block":
            return Verdict.block(code, priority=reason.priority, message=message, details=info)
        if reason.action == "confirm":
            return Verdict.confirm(
                code, priority=reason.priority, message=message, double=reason.double, details=info
            )
        if reason.action == "modify":
            return Verdict.modify(
                code, priority=reason.priority, message=message, parameters=parameters or {}, details=info
            )
        return Verdict.allow(details=info)


@dataclass(frozen=True)
class _Base:
    """What a policy takes from its configuration and registry alone."""

    config: PolicyConfig
    registry: ToolRegistry | None
    tools_json: str
    shown: PolicyConfig

    head: Any  # the digest of the body up to its teachings (``hashlib``'s, copied for each use)
    plain_version: str  # the version without extra teachings (most decisions)

    def version_with(self, extra: tuple[Teaching, ...]) -> str:
        """The version with ``extra`` teachings: the digest of the same bytes as
        ``json.dumps({"config": …, "teachings": […], "tools": …}, sort_keys=True)``."""
        return _version(self.config, self.head, [t.model_dump(mode="json") for t in extra], self.tools_json)


def _version(cfg: PolicyConfig, head: Any, teachings: list[Any], tools_json: str) -> str:
    digest = head.copy()
    digest.update(f'{_json(teachings)}, "tools": {tools_json}}}'.encode())
    return f"{cfg.version}-{digest.hexdigest()[:12]}"


# A process decides under one configuration and one registry (an organisation's approved skills
# make a registry of their own): their part of the policy is built once, not every decision.
# Both are held by the entry, so the ids of the key cannot be reused while it is kept; the
# configuration is frozen and a registry only grows (``register`` refuses a name twice), so its
# size tells a changed one. At most BASES_KEPT entries, the least recently used dropped.
BASES_KEPT = 16
_bases: OrderedDict[tuple[int, int, int], _Base] = OrderedDict()
_bases_lock = threading.Lock()


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _base(cfg: PolicyConfig, registry: ToolRegistry | None) -> _Base:
    size = len(registry) if registry is not None else -1
    key = (id(cfg), id(registry), size)
    with _bases_lock:
        hit = _bases.get(key)
        if hit is not None and hit.config is cfg and hit.registry is registry:
            _bases.move_to_end(key)
            return hit
    tools = {
        spec.name: {
            "danger": spec.danger,
            "danger_action": spec.danger_action,
            "min_level": required_level(spec.name, registry, cfg.authorization),
            "requires_confirmation": spec.requires_confirmation,
        }
        for spec in registry or ()
    }
    config_json, tools_json = _json(cfg.decision_data()), _json(tools)
    head = hashlib.sha256(f'{{"config": {config_json}, "teachings": '.encode())
    plain = _version(cfg, head, [], tools_json)
    made = _Base(cfg, registry, tools_json, cfg.with_registry(registry), head, plain)
    with _bases_lock:
        _bases[key] = made
        _bases.move_to_end(key)
        while len(_bases) > BASES_KEPT:
            _bases.popitem(last=False)
    return made
