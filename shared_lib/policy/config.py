"""Policy configuration as data: ``shared_lib/config/policy.json`` validated by this schema.

Everything the guardian, the authorization gate and the confirmation flow decide by —
thresholds, dangerous operations, NG / confidential / permission-assertion patterns,
company teachings, level tables, answer words, reason messages — lives in that file,
with the seed's values as defaults. ``CHARTER_POLICY`` names another file.

>>> cfg = load_policy_config()
>>> cfg.confidence.too_low, cfg.dangerous_operations["change_permission"].action
(0.3, 'block')
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from shared_lib.errors import ConfigError
from shared_lib.policy.approval_config import Approval
from shared_lib.policy.disclosure import DisclosureGrammar, parse_disclosure_grammar
from shared_lib.policy.patterns import ALL_SCOPES, ConfidentialPattern, NamedPattern, NgPattern, TextScope
from shared_lib.policy.reasons import GUARDIAN_REASONS, PART_MESSAGES
from shared_lib.policy.teachings import Teaching
from shared_lib.policy.values import checked_regexes
from shared_lib.settings import config_files
from shared_lib.tools.registry import UNKNOWN_PARAMETER, UNKNOWN_TOOL, ToolRegistry

POLICY_FILE = Path(__file__).resolve().parent.parent / "config" / "policy.json"
Risk = Literal["none", "low", "medium", "high", "critical"]
Level = Annotated[int, Field(ge=1, le=6)]
__all__ = ["ALL_SCOPES", "ConfidentialPattern", "NamedPattern", "NgPattern", "TextScope"]  # re-exported
DeptScope = Literal["own", "children", "descendants", "organization", "all"]


class _Cfg(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Constitution(_Cfg):
    """Article 4.4.2's reading of the proposer's own words (``policy.claims``): a permission
    pattern is a claim unless its clause reports someone else's words (``reported`` right after
    it: 「…とのこと」; ``sourced`` before it: 「申請書によると」), or its sentence leaves the
    decision to the system (``deferred``) or grounds it in a thing's own state (``object_state``:
    公開済み, not a right of a person)."""

    min_reasoning_chars: Annotated[int, Field(ge=0)] = 20
    permission_patterns: list[NamedPattern] = Field(default_factory=list)
    reported: str = ""
    sourced: str = ""
    deferred: str = ""
    object_state: str = ""

    @field_validator("reported", "sourced", "deferred", "object_state")
    @classmethod
    def _compiles(cls, value: str) -> str:
        checked_regexes([value])
        return value


class Security(_Cfg):
    ng_patterns: list[NgPattern] = Field(default_factory=list)
    confidential_patterns: list[ConfidentialPattern] = Field(default_factory=list)
    # named regexes a confidential word's ``disclosure`` refers to (a value next to the word)
    disclosure_markers: dict[str, str] = Field(default_factory=dict)
    # tools (regexes on the name) whose parameters leave the conversation get the confidential check
    # where a value leaves the person who said it: a message sent, a task given to someone (its body
    # is read by the assignee); a memory the asker keeps for themselves sends nothing out
    confidential_tool_patterns: list[str] = Field(default_factory=list)
    # tools that keep what they are given for later (a memory): read back in whatever room it is
    # asked in, so a colleague's HR value kept there is disclosed (``kept_disclosures``, the
    # grammar's pattern names); a contact or address is kept sealed for its author (``sealing.py``)
    kept_tool_patterns: list[str] = Field(default_factory=list)
    kept_disclosures: list[str] = Field(default_factory=list)
    # what discloses a value about a person, a credential or a deal (``disclosure.py``): the
    # grammar itself or the name of its file (relative: the packaged configuration folder)
    disclosure: DisclosureGrammar | None = None

    @field_validator("confidential_tool_patterns", "kept_tool_patterns")
    @classmethod
    def _compile(cls, value: list[str]) -> list[str]:
        checked_regexes(value)
        return value

    @field_validator("disclosure", mode="before")
    @classmethod
    def _grammar(cls, value: Any) -> Any:
        return parse_disclosure_grammar(value) if isinstance(value, str) else value

    @model_validator(mode="after")
    def _markers_exist(self) -> Security:
        checked_regexes(self.disclosure_markers.values())
        for secret in self.confidential_patterns:
            unknown = sorted(set(secret.disclosure) - set(self.disclosure_markers))
            if unknown:
                raise ValueError(
                    f"confidential pattern {secret.name!r}: unknown disclosure markers {unknown}"
                )
        relations = {c.name for c in self.disclosure.credentials} if self.disclosure else set()
        for ng in self.ng_patterns:
            if ng.relation and ng.relation not in relations:
                raise ValueError(f"ng pattern {ng.name!r}: no credential {ng.relation!r} in the grammar")
        return self

    def ng_found(self, secret: NgPattern, text: str) -> bool:
        """Whether ``text`` holds the secret's value (its own shape, or its grammar relation)."""
        if secret.search(text):
            return True
        grammar = self.disclosure
        return bool(secret.relation and grammar and grammar.credential(secret.relation, text))

    def discloses(self, secret: ConfidentialPattern, text: str) -> bool:
        """Whether ``text`` discloses what ``secret`` guards (not merely mentions the word)."""
        return secret.disclosure_in(text, self.disclosure_markers) is not None

    def sends_out(self, tool_name: str) -> bool:
        return any(re.search(p, tool_name) for p in self.confidential_tool_patterns)

    def keeps(self, tool_name: str) -> bool:
        return any(re.search(p, tool_name) for p in self.kept_tool_patterns)


class DangerRule(_Cfg):
    risk: Risk
    action: Literal["confirm", "block"] | None = None  # explicit action wins over the risk level

    @model_validator(mode="after")
    def _critical_blocks(self) -> DangerRule:
        if self.risk == "critical" and self.action not in (None, "block"):
            raise ValueError("a critical operation is always blocked; its action cannot be 'confirm'")
        return self


class ConfidenceThresholds(_Cfg):
    too_low: Annotated[float, Field(ge=0, le=1)] = 0.3
    low: Annotated[float, Field(ge=0, le=1)] = 0.5
    medium: Annotated[float, Field(ge=0, le=1)] = 0.7

    @model_validator(mode="after")
    def _ordered(self) -> ConfidenceThresholds:
        if not self.too_low <= self.low <= self.medium:
            raise ValueError("confidence thresholds must satisfy too_low <= low <= medium")
        return self


class Parameters(_Cfg):
    amount_keys: list[str] = Field(default_factory=lambda: ["amount"])
    amount_high: Annotated[float, Field(ge=0)] = 100_000
    amount_very_high: Annotated[float, Field(ge=0)] = 1_000_000
    recipient_keys: list[str] = Field(default_factory=lambda: ["recipients"])
    recipients_all_values: list[str] = Field(default_factory=lambda: ["all"])
    recipients_many: Annotated[int, Field(ge=1)] = 3
    recipients_many_content: Annotated[int, Field(ge=1)] = 10
    content_keys: list[str] = Field(default_factory=lambda: ["message"])
    # a group said instead of people (an announcement to 「営業部」): as many as it holds, asked once
    group_keys: list[str] = Field(default_factory=list)
    delete_tool_patterns: list[str] = Field(default_factory=lambda: ["^delete_"])
    delete_count_keys: list[str] = Field(default_factory=lambda: ["ids"])

    @model_validator(mode="after")
    def _ordered(self) -> Parameters:
        if self.amount_high > self.amount_very_high or self.recipients_many > self.recipients_many_content:
            raise ValueError("'high' thresholds must not exceed 'very high' ones")
        checked_regexes(self.delete_tool_patterns)
        return self


Fix = Literal["strip_strings", "dedupe_lists", "amount_numbers", "iso_dates"]
ALL_FIXES: tuple[Fix, ...] = ("strip_strings", "dedupe_lists", "amount_numbers", "iso_dates")


class Consistency(_Cfg):
    date_keys: list[str] = Field(default_factory=lambda: ["limit_date"])
    far_future_days: Annotated[int, Field(ge=1)] = 365
    date_ranges: list[tuple[str, str]] = Field(default_factory=list)
    fixes: list[Fix] = Field(default_factory=lambda: list(ALL_FIXES))


class Authorization(_Cfg):
    default_level: Level = 2
    tool_levels: dict[str, Level] = Field(default_factory=dict)
    department_scope: dict[str, DeptScope] = Field(default_factory=dict)
    user_target_keys: list[str] = Field(default_factory=lambda: ["target_user_id"])
    # parameters naming the target person, resolved through the directory like the handlers do
    user_name_keys: list[str] = Field(default_factory=lambda: ["assignee_name", "target_user_name"])
    # tools whose named person is given work, not read: §5.4.4 checks data access where a tool
    # refers to a person's data, and asking a colleague of another department is no such access
    assigning_tools: list[str] = Field(default_factory=lambda: ["chatwork_task_create"])
    department_target_keys: list[str] = Field(default_factory=lambda: ["target_department_id"])
    top_secret_value: str = "top_secret"
    top_secret_level: Level = 6

    @field_validator("department_scope")
    @classmethod
    def _all_levels(cls, value: dict[str, DeptScope]) -> dict[str, DeptScope]:
        missing = {str(n) for n in range(1, 7)} - set(value)
        if missing:
            raise ValueError(f"department_scope needs every level 1-6; missing {sorted(missing)}")
        return value

    def scope(self, level: int) -> DeptScope:
        return self.department_scope.get(str(level), "own")


class Confirmation(_Cfg):
    session_ttl_minutes: Annotated[int, Field(ge=1)] = 30
    pending_ttl_minutes: Annotated[int, Field(ge=1)] = 10
    approve_words: list[str] = Field(default_factory=list)
    deny_words: list[str] = Field(default_factory=list)
    urgent_words: list[str] = Field(default_factory=list)
    filler_words: list[str] = Field(default_factory=list)


class Display(_Cfg):
    """What a user reads for the names a message carries that no tool declares: parameter keys
    only the policy knows (``start_date``, ``amount``) and the names of its patterns."""

    parameters: dict[str, str] = Field(default_factory=dict)
    patterns: dict[str, str] = Field(default_factory=dict)


UNKNOWN_PATTERN = "送れない内容"
# message values that carry an internal name: what each is shown as
_PARAMETER_VALUES = ("key", "start", "end")


class PolicyConfig(_Cfg):
    version: Annotated[int, Field(ge=1)]
    description: str = ""
    timezone: str = "Asia/Tokyo"
    constitution: Constitution = Field(default_factory=Constitution)
    security: Security = Field(default_factory=Security)
    dangerous_operations: dict[str, DangerRule] = Field(default_factory=dict)
    teachings: list[Teaching] = Field(default_factory=list)
    confidence: ConfidenceThresholds = Field(default_factory=ConfidenceThresholds)
    parameters: Parameters = Field(default_factory=Parameters)
    consistency: Consistency = Field(default_factory=Consistency)
    authorization: Authorization
    confirmation: Confirmation = Field(default_factory=Confirmation)
    approval: Approval = Field(default_factory=Approval)
    messages: dict[str, str]
    display: Display = Field(default_factory=Display)
    # the registry's names (``with_registry``): a message shows 「アナウンスの送信」, never announce
    _tools: dict[str, str] | None = PrivateAttr(default=None)
    _labels: dict[str, str] = PrivateAttr(default_factory=dict)

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown timezone {value!r}") from exc
        return value

    @model_validator(mode="after")
    def _messages_cover_codes(self) -> PolicyConfig:
        missing = sorted({*GUARDIAN_REASONS, *PART_MESSAGES} - set(self.messages))
        if missing:
            raise ValueError(f"messages lacks reason codes {missing}")
        return self

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    def with_registry(self, registry: ToolRegistry | None) -> PolicyConfig:
        """This configuration whose messages name tools and parameters as the registry shows them."""
        copy = self.model_copy()
        if registry is not None:
            copy._tools = {spec.name: registry.display_name(spec.name) for spec in registry}
            copy._labels = registry.labels()
        return copy

    def message(self, code: str, **values: Any) -> str:
        """The catalogue message of ``code`` with ``{placeholders}`` filled (missing ones empty);
        ``tool``, ``key``/``start``/``end``, ``fields`` and ``pattern`` as a user reads them."""
        shown = {k: _show(self._displayed(k, v)) for k, v in values.items()}
        return self.messages.get(code, code).format_map(_Blank(shown))

    def _displayed(self, key: str, value: Any) -> Any:
        if key == "tool" and self._tools is not None:
            return self._tools.get(str(value), UNKNOWN_TOOL)
        if key in _PARAMETER_VALUES:
            return self.label(str(value))
        if key == "fields":
            return "、".join(dict.fromkeys(self.label(f) for f in str(value).split("、") if f))
        if key == "pattern":
            return self.display.patterns.get(str(value), UNKNOWN_PATTERN)
        return value

    def label(self, param: str) -> str:
        """A parameter key as a user reads it: the registry's label, else the policy's own."""
        return self._labels.get(param) or self.display.parameters.get(param) or UNKNOWN_PARAMETER

    def decision_data(self) -> dict[str, Any]:
        """What decisions depend on (the policy version hashes this): not messages, display
        names nor answer words."""
        return self.model_dump(mode="json", exclude={"description", "messages", "display", "confirmation"})


class _Blank(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return ""


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int | float):
        return f"{value:,.0f}" if float(value).is_integer() else f"{value:,}"
    return str(value)


def parse_policy_config(data: Any, *, source: str = "policy") -> PolicyConfig:
    try:
        return PolicyConfig.model_validate(data)
    except ValidationError as exc:
        details = "; ".join(f"{'.'.join(str(x) for x in e['loc'])}: {e['msg']}" for e in exc.errors()[:10])
        raise ConfigError(f"{source}: invalid policy configuration: {details}") from exc


@lru_cache(maxsize=8)
def _load(path: str) -> PolicyConfig:
    file = Path(path)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"policy file {file}: {exc}") from exc
    return parse_policy_config(data, source=str(file))


def load_policy_config(path: str | None = None) -> PolicyConfig:
    """The policy from ``path``, ``CHARTER_POLICY`` or the packaged default (cached per path)."""
    return _load(str(path or config_files.current().policy or POLICY_FILE))
