"""Typed decisions of the deciding layers: guardian verdicts and authorization results.

Each carries a stable machine ``reason_code`` (a public contract: add codes, never
rename) and a human message. Decisions are built with named constructors:

>>> Verdict.allow().action
'allow'
>>> Verdict.block("security.ng_pattern", priority=2, message="...").blocked
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

GuardianAction = Literal["allow", "confirm", "block", "modify"]
AuthResult = Literal["allowed", "denied", "not_applicable"]


class Verdict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    action: GuardianAction
    reason_code: str
    priority: int = Field(ge=0, le=8, description="Tree priority that decided (0 = nothing matched)")
    message: str = ""
    modified_parameters: dict[str, Any] | None = None
    double_confirmation: bool = False
    details: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def allow(cls, *, details: dict[str, Any] | None = None) -> Verdict:
        return cls(action="allow", reason_code="pass", priority=0, details=details or {})

    @classmethod
    def confirm(
        cls,
        reason_code: str,
        *,
        priority: int,
        message: str,
        double: bool = False,
        details: dict[str, Any] | None = None,
    ) -> Verdict:
        return cls(
            action="confirm",
            reason_code=reason_code,
            priority=priority,
            message=message,
            double_confirmation=double,
            details=details or {},
        )

    @classmethod
    def block(
        cls, reason_code: str, *, priority: int, message: str, details: dict[str, Any] | None = None
    ) -> Verdict:
        return cls(
            action="block", reason_code=reason_code, priority=priority, message=message, details=details or {}
        )

    @classmethod
    def modify(
        cls,
        reason_code: str,
        *,
        priority: int,
        message: str,
        parameters: dict[str, Any],
        details: dict[str, Any] | None = None,
    ) -> Verdict:
        return cls(
            action="modify",
            reason_code=reason_code,
            priority=priority,
            message=message,
            modified_parameters=parameters,
            details=details or {},
        )

    def with_details(self, **details: Any) -> Verdict:
        """A copy with more ``details`` (decisions are frozen)."""
        return self.model_copy(update={"details": {**self.details, **details}})

    @property
    def blocked(self) -> bool:
        return self.action == "block"


class AuthDecision(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    result: AuthResult
    reason_code: str
    user_level: int | None = None
    required_level: int | None = None
    message: str = ""
    details: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def allowed(
        cls, *, user_level: int, required_level: int, details: dict[str, Any] | None = None
    ) -> AuthDecision:
        return cls(
            result="allowed",
            reason_code="pass",
            user_level=user_level,
            required_level=required_level,
            details=details or {},
        )

    @classmethod
    def denied(
        cls,
        reason_code: str,
        *,
        user_level: int | None = None,
        required_level: int | None = None,
        message: str = "",
        details: dict[str, Any] | None = None,
    ) -> AuthDecision:
        return cls(
            result="denied",
            reason_code=reason_code,
            user_level=user_level,
            required_level=required_level,
            message=message,
            details=details or {},
        )

    @classmethod
    def not_applicable(cls) -> AuthDecision:
        return cls(result="not_applicable", reason_code="not_applicable")


# Where a layer's turn goes next when it does not say: the layer's own output topic.
DEFAULT = "__default__"


@dataclass
class Outcome:
    """What a layer reports: its outcome word, a reason code, and where the turn goes next."""

    outcome: str = "ok"
    reason_code: str = ""
    next_topic: str | None = DEFAULT
    detail: str = ""
