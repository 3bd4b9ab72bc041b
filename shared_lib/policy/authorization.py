"""Authorization Gate (seed 000 §6.4): independent of anything the LLM said.

The user's level and department come from the directory, never from the proposal; each
tool's minimum level from the tool registry and the policy's seed table (§6.4.4, the
stricter of the two; level 2 for a tool neither knows). Data access (``target_user_id``)
and department access (``target_department_id``) follow the level table of §6.4.3. A
target person given by name (``assignee_name``, ``target_user_name``: the policy's
``user_name_keys``) is resolved through the directory with the handlers' own resolver
(``tools.directory.resolve_person``: 「俺」 is the sender, honorifics dropped) and checked
exactly as its id would be; a name that resolves to nobody or to several people is left
to the handler, which then refuses or asks and touches nothing. A tool that gives the named
person work rather than reading their data (``assigning_tools``: a task for a colleague of
another department) has no data target (§5.4.4 checks data access where a tool refers to data):


    level 1-2  own department          level 5  whole organisation, except top secret
    level 3    + direct children       level 6  everything
    level 4    + all descendants

Any error reading the directory denies (``directory.unavailable``); the authorizer layer
raises the admin alert.

>>> from shared_lib.adapters.memory_store import MemoryStore
>>> from shared_lib.turn.proposal import Proposal
>>> from shared_lib.tools.builtin import builtin_registry
>>> store = MemoryStore(); store.set("orgs/o/users/u", {"level": 2})
>>> p = Proposal.model_validate({"output_type": "tool_call", "reasoning": {"intent_understanding": "x",
...     "tool_selection_reason": "y"}, "confidence": {"overall": 1}, "tool_calls": [{"tool_name": "view_all_users"}]})
>>> authorize(p, store=store, org_id="o", user_id="u", registry=builtin_registry()).reason_code
'level.insufficient'
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from shared_lib.policy.config import Authorization, PolicyConfig, load_policy_config
from shared_lib.policy.directory import (
    Directory,
    DirectoryUnavailable,
    DirectoryUser,
    StoreDirectory,
    _Tree,
    walkable,
)
from shared_lib.ports import Store
from shared_lib.tools.directory import resolve_person
from shared_lib.tools.registry import ToolInputError, ToolRegistry
from shared_lib.turn.decisions import AuthDecision
from shared_lib.turn.proposal import Proposal, ToolCall, ToolCallProposal


def required_level(tool_name: str, registry: ToolRegistry | None, auth: Authorization) -> int:
    """The stricter of the registry entry and the policy's table; the default for unknown tools."""
    levels = []
    spec = registry.get(tool_name) if registry is not None else None
    if spec is not None:
        levels.append(spec.min_level)
    if tool_name in auth.tool_levels:
        levels.append(auth.tool_levels[tool_name])
    return max(levels) if levels else auth.default_level


def authorize(
    proposal: Proposal,
    *,
    store: Store,
    org_id: str,
    user_id: str,
    registry: ToolRegistry,
    directory: Directory | None = None,
    config: PolicyConfig | None = None,
) -> AuthDecision:
    """Allowed only if every tool call passes level, data and department checks."""
    root = proposal.root
    if not isinstance(root, ToolCallProposal):
        return AuthDecision.not_applicable()
    auth = (config or load_policy_config()).authorization
    tree = walkable(directory if directory is not None else StoreDirectory(store, org_id))

    def by_name(name: str) -> str | None:
        try:
            return resolve_person(store, org_id, name, sender_id=user_id).user_id
        except ToolInputError:  # nobody or several: the handler refuses or asks
            return None
        except Exception as exc:  # the directory could not be read: deny
            raise DirectoryUnavailable(f"resolving a name: {type(exc).__name__}") from exc

    try:
        return _check(root.tool_calls, tree, user_id, registry, auth, by_name)
    except DirectoryUnavailable as exc:
        return AuthDecision.denied(
            "directory.unavailable", message="access_control_error", details={"error": str(exc)[:300]}
        )


def _check(
    calls: Iterable[ToolCall],
    tree: _Tree,
    user_id: str,
    registry: ToolRegistry,
    auth: Authorization,
    by_name: Callable[[str], str | None],
) -> AuthDecision:
    calls = list(calls)
    user = tree.user(user_id)
    required = 0
    for call in calls:
        need = required_level(call.tool_name, registry, auth)
        required = max(required, need)
        if user is None or user.level < need:
            return AuthDecision.denied(
                "level.insufficient",
                user_level=user.level if user else None,
                required_level=need,
                details={"tool_name": call.tool_name},
            )
        name_keys = [] if call.tool_name in auth.assigning_tools else auth.user_name_keys
        named = [by_name(n) for key in name_keys for n in _ids(call.parameters.get(key))]
        targets = [t for key in auth.user_target_keys for t in _ids(call.parameters.get(key))]
        for target in targets + [t for t in named if t is not None]:
            if not _may_see_user(tree, user, target, auth):
                return AuthDecision.denied(
                    "data.no_access",
                    user_level=user.level,
                    required_level=need,
                    details={"tool_name": call.tool_name, "target_user_id": target},
                )
        for key in auth.department_target_keys:
            for target in _ids(call.parameters.get(key)):
                if not _may_see_department(tree, user, target, auth):
                    return AuthDecision.denied(
                        "department.no_access",
                        user_level=user.level,
                        required_level=need,
                        details={"tool_name": call.tool_name, "target_department_id": target},
                    )
    if user is None or not calls:
        # Only a proposal without tool calls gets here (the model forbids it, ``model_construct``
        # does not). Deny explicitly: an ``assert`` would vanish under ``python -O``.
        return AuthDecision.denied(
            "level.insufficient",
            user_level=user.level if user else None,
            required_level=required,
            details={"tool_calls": 0},
        )
    return AuthDecision.allowed(user_level=user.level, required_level=required)


def _ids(value: Any) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, list | tuple):
        return [str(v) for v in value if v not in (None, "")]
    return [str(value)]


def _may_see_user(tree: _Tree, user: DirectoryUser, target_id: str, auth: Authorization) -> bool:
    if target_id == user.user_id:
        return True
    target = tree.user(target_id)
    if target is None:
        return False
    secret = target.classification == auth.top_secret_value or tree.top_secret(
        target.department_id, auth.top_secret_value
    )
    if secret and user.level < auth.top_secret_level:
        return False
    return _in_scope(tree, user, target.department_id, auth)


def _may_see_department(tree: _Tree, user: DirectoryUser, dept_id: str, auth: Authorization) -> bool:
    if tree.department(dept_id) is None:
        return False
    if tree.top_secret(dept_id, auth.top_secret_value) and user.level < auth.top_secret_level:
        return False
    return _in_scope(tree, user, dept_id, auth)


def _in_scope(tree: _Tree, user: DirectoryUser, dept_id: str | None, auth: Authorization) -> bool:
    scope = auth.scope(user.level)
    if scope in ("organization", "all"):
        return True
    if dept_id is None or user.department_id is None:
        return False
    if dept_id == user.department_id:
        return True
    chain = tree.ancestors(dept_id)
    if scope == "children":
        return len(chain) > 1 and chain[1] == user.department_id
    if scope == "descendants":
        return user.department_id in chain[1:]
    return False
