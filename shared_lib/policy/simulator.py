"""Policy simulator for operators: what would the charter decide for this proposal?

The input names a proposal (seed 000 §5.2.3b schema), a user, a hypothetical directory
and optionally the time; the output is the guardian verdict and the authorization result.
It runs the very functions the guardian and authorizer layers run — ``guardian.evaluate``
and ``authorization.authorize`` — with an in-memory directory instead of the store. The
user's level comes from ``user.level`` or the directory, never from the proposal.

>>> from shared_lib.wiring.features import tool_registry
>>> out = simulate(SimulationInput.model_validate({
...     "proposal": {"output_type": "text_response", "reasoning": {"intent_understanding": "挨拶されたので挨拶を返す",
...                  "no_tool_reason": "雑談でありツールを使う必要はない"}, "confidence": {"overall": 0.9},
...                  "text_response": "こんにちはウル"},
...     "user": {"user_id": "u1", "org_id": "acme", "level": 2, "department_id": "sales"}}),
...     registry=tool_registry())
>>> out["guardian"]["action"], out["authorization"]["result"]
('allow', 'not_applicable')
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.ids import utc_now
from shared_lib.policy import guardian
from shared_lib.policy.authorization import authorize
from shared_lib.policy.config import PolicyConfig, load_policy_config
from shared_lib.policy.directory import Department, DirectoryUser, MemoryDirectory
from shared_lib.policy.effective import Policy
from shared_lib.policy.teachings import Teaching
from shared_lib.tools.registry import ToolRegistry
from shared_lib.turn.decisions import AuthDecision
from shared_lib.turn.proposal import Proposal

Level = Annotated[int, Field(ge=1, le=6)]


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SimUser(_In):
    user_id: Annotated[str, Field(min_length=1)]
    org_id: Annotated[str, Field(min_length=1)] = "default"
    level: Level | None = None
    department_id: str | None = None
    classification: str | None = None


class SimDepartment(_In):
    parent: str | None = None
    classification: str | None = None


class SimDirectoryUser(_In):
    department_id: str | None = None
    level: Level
    classification: str | None = None


class SimDirectory(_In):
    departments: dict[str, SimDepartment] = Field(default_factory=dict)
    users: dict[str, SimDirectoryUser] = Field(default_factory=dict)


class SimulationInput(_In):
    proposal: Proposal
    user: SimUser
    directory: SimDirectory = Field(default_factory=SimDirectory)
    now: AwareDatetime | None = None
    teachings: list[Teaching] = Field(default_factory=list)  # the organisation's, as the context would bring


def directory_of(data: SimulationInput) -> MemoryDirectory:
    """The hypothetical directory, with the simulated user's own entry merged over it."""
    users = {
        uid: DirectoryUser(uid, u.level, u.department_id, u.classification)
        for uid, u in data.directory.users.items()
    }
    me, listed = data.user, users.get(data.user.user_id)
    level = me.level if me.level is not None else (listed.level if listed else None)
    if level is not None:
        users[me.user_id] = DirectoryUser(
            me.user_id,
            level,
            me.department_id or (listed.department_id if listed else None),
            me.classification or (listed.classification if listed else None),
        )
    departments = {
        did: Department(did, d.parent, d.classification) for did, d in data.directory.departments.items()
    }
    return MemoryDirectory(users, departments)


def simulate(
    data: SimulationInput, *, registry: ToolRegistry, config: PolicyConfig | None = None
) -> dict[str, Any]:
    """What the guardian and the gate decide on ``data``; ``registry`` is the composition root's
    (``wiring.features.tool_registry``: the built-ins and the features' tools)."""
    reg = registry
    cfg = config or load_policy_config()
    now: datetime = data.now or utc_now()
    policy = Policy.build(cfg, reg, data.teachings)
    verdict = guardian.evaluate(
        data.proposal, registry=reg, now=now, user_id=data.user.user_id, policy=policy
    )
    if verdict.blocked:  # as the authorizer layer: nothing to authorize once the guardian blocked
        auth = AuthDecision.not_applicable()
    else:
        auth = authorize(
            data.proposal,
            store=MemoryStore(),
            org_id=data.user.org_id,
            user_id=data.user.user_id,
            registry=reg,
            directory=directory_of(data),
            config=cfg,
        )
    return {
        "guardian": {
            "action": verdict.action,
            "reason_code": verdict.reason_code,
            "priority": verdict.priority,
            "message": verdict.message,
            "modified_parameters": verdict.modified_parameters,
            "double_confirmation": verdict.double_confirmation,
            "policy_version": policy.version,
        },
        "authorization": {
            "result": auth.result,
            "reason_code": auth.reason_code,
            "user_level": auth.user_level,
            "required_level": auth.required_level,
        },
    }
