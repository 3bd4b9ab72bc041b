"""The ``approval`` section of the policy (seed 002 §6, §10.2): approval jobs and auto-approve.

>>> Approval().hard_require[:2], Approval().auto_approve.ttl_minutes
(['delete', 'rename'], 60)
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Cfg(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


HardRequireKind = Literal["delete", "rename", "send_sensitive", "push_public", "cost_over_limit"]
HARD_REQUIRE: tuple[HardRequireKind, ...] = (
    "delete",
    "rename",
    "send_sensitive",
    "push_public",
    "cost_over_limit",
)


class AutoApproveLimits(_Cfg):
    """Seed 002 §6.4 / §10.2: a grant lives ``ttl_minutes`` unless its author says otherwise,
    never longer than ``max_ttl_minutes``."""

    ttl_minutes: Annotated[int, Field(ge=1)] = 60
    max_ttl_minutes: Annotated[int, Field(ge=1)] = 1440


class Approval(_Cfg):
    """Approval jobs (seed 002 §6, §10.2). ``required_by_default``: an operation the guardian
    asks about needs a person's approval unless an auto-approve grant covers it (``false``: it
    runs without one, except the hard-require list). ``approver_min_level``: ``None`` — only the
    requester answers their job; a level — a person of that level or higher in the same
    organisation may also answer it. ``hard_require``: kinds that always ask, whatever a grant
    says; ``operations`` says which tools are which kind; ``send_sensitive`` is also any send
    whose text the guardian found confidential; ``cost_over_limit`` is a call whose cost estimate
    exceeds ``cost_limit_usd``."""

    required_by_default: bool = True
    approver_min_level: Annotated[int, Field(ge=1, le=6)] | None = None
    hard_require: list[HardRequireKind] = Field(default_factory=lambda: list(HARD_REQUIRE))
    operations: dict[HardRequireKind, list[str]] = Field(default_factory=dict)
    cost_limit_usd: Annotated[float, Field(gt=0)] = 1.0
    auto_approve: AutoApproveLimits = Field(default_factory=AutoApproveLimits)
