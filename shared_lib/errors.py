"""Errors: one small hierarchy and the seed 000 §6.7.3 catalogue.

    CharterError                      base of everything we raise on purpose
    ├── ConfigError                   configuration/flags/persona that does not parse
    ├── ArgumentError (ValueError)    a command argument or query parameter that does not parse
    ├── EnvelopeError                 a Pub/Sub message that is not a valid Turn
    │   └── EnvelopeTooLarge
    ├── StoreUnavailable              the store cannot be reached (degrade or redeliver)
    ├── LayerRetry                    "try again later": the push handler answers 5xx
    └── LLMError                      the LLM port failed after its retry policy
        └── LLMOutputError            the LLM answered, but not a valid proposal
            └── InvalidProposal       (brain.validation) str() is the retry's guidance

Subclasses that belong to one area are defined next to it, under the same base:
``ports.AlreadyExistsError`` (``create`` found the document), ``channels.base.PayloadError``
(a webhook body off the provider's schema), ``channels.transport.SendFailure``,
``tools.registry.ToolInputError`` (a parameter failed a handler's fixed logic),
``adapters.scoped.CrossOrgAccess`` / ``WriteRefused``, ``tools.task_backend.TaskBackendError``
(``TaskOperationUnsupported``, ``chatwork_api.ChatWorkAPIError``),
``state.session.InvalidTransition``, ``policy.directory.DirectoryUnavailable``,
``ops.replay.ReplayError``, ``ops.notify.NotifyError`` and the adapter-internal
``adapters.anthropic_llm.StreamInterrupted``.

``BrainError`` is the *record* of an error on the turn (seed §6.7.3 fields). User-facing
text never comes from an exception string: it comes from the persona's message
catalogue keyed by the error ``code``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from shared_lib.ids import new_short_id, utc_now

Category = Literal[
    "user_error", "system_error", "llm_error", "validation_error", "permission_error", "external_error"
]
Severity = Literal["low", "medium", "high", "critical"]
Fallback = Literal[
    "none",
    "retry",
    "proceed_without_memory",
    "request_clarification",
    "retry_with_guidance",
    "proceed_with_caution",
]


class CharterError(Exception):
    """Base class for errors Charter raises on purpose."""


class ConfigError(CharterError):
    pass


class ArgumentError(CharterError, ValueError):
    """A command-line argument or query parameter that does not parse.

    Also a ``ValueError``: argparse types and the dashboard's 400 handler treat it as bad input.
    """


class EnvelopeError(CharterError):
    pass


class EnvelopeTooLarge(EnvelopeError):
    pass


class StoreUnavailable(CharterError):
    pass


class LayerRetry(CharterError):
    """Raised by a layer that wants Pub/Sub to redeliver (answered with HTTP 503)."""


class LLMError(CharterError):
    def __init__(self, code: str, detail: str = "", retry_after: float | None = None) -> None:
        super().__init__(f"{code}: {detail}" if detail else code)
        self.code = code
        self.detail = detail
        self.retry_after = retry_after


class LLMOutputError(LLMError):
    pass


class CatalogueEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    layer: str
    category: Category
    severity: Severity
    recoverable: bool
    fallback: Fallback = "none"
    alert_admin: bool = False
    retry_after_seconds: int | None = None
    silent: bool = False  # no user message (handled internally, e.g. retry with guidance)


def _e(layer: str, category: Category, severity: Severity, recoverable: bool, **kw: Any) -> CatalogueEntry:
    return CatalogueEntry(layer=layer, category=category, severity=severity, recoverable=recoverable, **kw)


# Seed 000 §6.7.3, plus the few codes the distributed runtime adds (marked "added").
CATALOGUE: dict[str, CatalogueEntry] = {
    "db_connection_error": _e("context", "system_error", "high", True, retry_after_seconds=30),
    "memory_access_error": _e("context", "system_error", "medium", True, fallback="proceed_without_memory"),
    "api_timeout": _e("brain", "llm_error", "medium", True, retry_after_seconds=5),
    "rate_limit": _e("brain", "llm_error", "high", True, retry_after_seconds=60),
    "parse_error": _e("brain", "llm_error", "medium", True, fallback="request_clarification"),
    "invalid_tool_call": _e("brain", "llm_error", "low", True, fallback="retry_with_guidance", silent=True),
    "llm_unavailable": _e("brain", "llm_error", "high", True, retry_after_seconds=30),  # added: 5xx/529
    "constitution_violation": _e("guardian", "llm_error", "critical", False, alert_admin=True),
    "ceo_teaching_check_error": _e(
        "guardian", "system_error", "medium", True, fallback="proceed_with_caution", silent=True
    ),
    "permission_denied": _e("authorizer", "permission_error", "low", False),
    "access_control_error": _e("authorizer", "permission_error", "high", False, alert_admin=True),
    "handler_not_found": _e("executor", "system_error", "high", False),
    "execution_error": _e("executor", "system_error", "medium", True, retry_after_seconds=5),
    "external_api_error": _e("executor", "external_error", "medium", True, retry_after_seconds=30),
    "validation_error": _e("executor", "validation_error", "low", False),  # added: fixed-logic checks
    "tool_timeout": _e("executor", "system_error", "medium", True, retry_after_seconds=5),  # added
    "send_error": _e("responder", "external_error", "high", True, alert_admin=True),  # added
    "layer_failed": _e("observer", "system_error", "critical", False, alert_admin=True),  # added: DLQ
    # added: the turn's budget was spent before the brain started (waiting, not the brain: budgets.py)
    "turn_backlog": _e("brain", "system_error", "high", True, alert_admin=True, retry_after_seconds=60),
}


class BrainError(BaseModel):
    """The record of one error on a turn (seed 000 §6.7.3 ``BrainError``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    error_id: str = Field(default_factory=lambda: new_short_id("err"))
    code: str
    category: Category
    severity: Severity
    layer: str
    message: str  # internal, already masked
    recoverable: bool
    fallback: Fallback = "none"
    alert_admin: bool = False
    retry_after_seconds: int | None = None
    details: dict[str, Any] = Field(default_factory=dict)
    at: datetime = Field(default_factory=utc_now)

    @classmethod
    def of(cls, code: str, message: str, *, layer: str | None = None, **details: Any) -> BrainError:
        entry = CATALOGUE[code]
        return cls(
            code=code,
            category=entry.category,
            severity=entry.severity,
            layer=layer or entry.layer,
            message=message[:2000],
            recoverable=entry.recoverable,
            fallback=entry.fallback,
            alert_admin=entry.alert_admin,
            retry_after_seconds=entry.retry_after_seconds,
            details=details,
        )
