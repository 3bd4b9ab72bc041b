"""The router's dictionary as data: ``config/routing.json`` validated by this schema.

The file holds what may change without a code change (seed 003 拡張性: the dictionary grows
from the logs; the classifier prompt is one fixed page): the rules of strong evidence, the
classifier's prompt and adoption thresholds, the one-line announcements of a route change,
each route's profile (``RouteProfile``: its instructions, tools, model and whether a cloud
model may serve it), and the channels fixed to CHAT with the DELEGATE protocol's instructions
(``DelegationConfig``). ``CHARTER_ROUTING`` names another file. A rule is

    {"id": "code.diff", "route": "CODE", "priority": 100, "description": "…",
     "when": [{"regex": "^diff --git ", "at_least": 1}, …],
     "examples": ["…"], "counterexamples": ["…"]}

and matches when every condition of ``when`` holds. A ``regex`` condition counts the
pattern's matches in the text (compiled with ``re.MULTILINE``, and ``re.IGNORECASE``
unless ``ignore_case`` is false: ``^`` is the start of a line); a ``keywords`` condition
counts the distinct keywords the text contains (case-insensitive substrings). Either
holds when the count reaches ``at_least``. ``examples`` must route to the rule and
``counterexamples`` must not match it (the unit tests check both).

>>> cfg = load_routing_config()
>>> cfg.classifier.min_confidence, cfg.ordered_rules()[0].route.value
(0.6, 'CODE')
"""

from __future__ import annotations

import json
import re
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from shared_lib.errors import ConfigError
from shared_lib.routing.model import Route, Score
from shared_lib.settings import config_files

ROUTING_FILE = Path(__file__).resolve().parent.parent / "config" / "routing.json"
EVIDENCE_CHARS = 60
NonEmpty = Annotated[str, Field(min_length=1)]


class _Cfg(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Condition(_Cfg):
    """One test on the text: a regular expression or a keyword list, counted against ``at_least``."""

    regex: NonEmpty | None = None
    keywords: list[NonEmpty] | None = None
    at_least: Annotated[int, Field(ge=1)] = 1
    ignore_case: bool = True

    @model_validator(mode="after")
    def _one_kind(self) -> Condition:
        if (self.regex is None) == (self.keywords is None):
            raise ValueError("a condition has exactly one of 'regex' or 'keywords'")
        if self.keywords is not None and not self.keywords:
            raise ValueError("'keywords' is empty")
        if self.regex is not None:
            try:
                re.compile(self.regex, self.flags)
            except re.error as exc:
                raise ValueError(f"invalid regular expression {self.regex!r}: {exc}") from exc
        return self

    @property
    def flags(self) -> int:
        return re.MULTILINE | (re.IGNORECASE if self.ignore_case else 0)

    @cached_property
    def _compiled(self) -> tuple[re.Pattern[str] | None, tuple[re.Pattern[str], ...]]:
        """(one pattern that finds any of the condition's terms, each term's own), compiled once:
        the router tests every rule on every turn, and re's own cache was looked up a keyword
        at a time (with the flags rebuilt each time), which made most of what routing cost."""
        if self.regex is not None:
            return None, (re.compile(self.regex, self.flags),)
        terms = tuple(re.escape(k) for k in self.keywords or [])
        return re.compile("|".join(terms), self.flags), tuple(re.compile(t, self.flags) for t in terms)

    def holds(self, text: str) -> str | None:
        """The first fragment that counted when the condition holds on ``text``, else ``None``."""
        any_term, patterns = self._compiled
        if any_term is None:
            first: str | None = None
            for n, m in enumerate(patterns[0].finditer(text), start=1):
                first = m.group(0) if first is None else first
                if n >= self.at_least:
                    return first
            return None
        if any_term.search(text) is None:  # most texts hold none of a rule's keywords
            return None
        hits = [hit for p in patterns if (hit := p.search(text))]
        if len(hits) < self.at_least:
            return None
        return min(hits, key=lambda hit: hit.start()).group(0)


class Rule(_Cfg):
    """Strong evidence for one route: every condition of ``when`` holds."""

    id: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]*(?:\.[a-z0-9_]+)+$")]
    route: Route
    priority: int
    description: str = ""
    when: Annotated[list[Condition], Field(min_length=1)]
    examples: Annotated[list[NonEmpty], Field(min_length=1)]
    counterexamples: list[NonEmpty] = Field(default_factory=list)


class ClassifierConfig(_Cfg):
    """The classifier's fixed prompt (one page, as lines) and the router's adoption gate."""

    min_confidence: Score = 0.6
    min_confidence_for_code: Score = 0.8
    max_tokens: Annotated[int, Field(ge=16, le=4096)] = 300
    max_input_chars: Annotated[int, Field(ge=100)] = 4000
    system_prompt: Annotated[list[str], Field(min_length=1)]

    @model_validator(mode="after")
    def _code_is_stricter(self) -> ClassifierConfig:
        if self.min_confidence_for_code < self.min_confidence:
            raise ValueError("min_confidence_for_code is below min_confidence")
        return self

    def prompt(self) -> str:
        return "\n".join(self.system_prompt).strip() + "\n"


class RouteProfile(_Cfg):
    """What the brain works with on one route (seed 003: a route selects the worker's setup).

    ``prompt`` is the route's own instructions (Japanese lines; empty: none, as for CHAT),
    ``tools`` is ``"all"`` or the registry tools offered (the decision tool always is),
    ``model`` is ``"default"`` (the flags' ``model``) or ``"fast"`` (their ``fast_model``),
    ``cloud`` says whether a cloud model may serve the route (``false``: the legacy brain).
    Tool names are checked against the registry by the unit tests (this floor has no registry).
    """

    prompt: list[str] = Field(default_factory=list)
    tools: Literal["all"] | Annotated[list[NonEmpty], Field(min_length=1)] = "all"
    model: Literal["default", "fast"] = "default"
    cloud: bool = True

    def instructions(self) -> str:
        return "\n".join(self.prompt).strip()

    def offers(self, tool: str) -> bool:
        return self.tools == "all" or tool in self.tools


class DelegationConfig(_Cfg):
    """The channels whose input starts in CHAT (seed 002 §2.6 ``line_forced_chat``), and what the
    conversation model is told of the DELEGATE protocol there (``shared_lib.routing.delegate``)."""

    channels: list[NonEmpty] = Field(default_factory=lambda: ["line"])
    prompt: list[str] = Field(default_factory=list)

    def instructions(self) -> str:
        return "\n".join(self.prompt).strip()


class RoutingConfig(_Cfg):
    version: int
    description: str = ""
    max_scan_chars: Annotated[int, Field(ge=100)] = 20000  # rules look at this much of the text
    rules: list[Rule]
    classifier: ClassifierConfig
    announcements: dict[Route, NonEmpty] = Field(default_factory=dict)
    profiles: dict[Route, RouteProfile]
    delegation: DelegationConfig = Field(default_factory=DelegationConfig)

    @model_validator(mode="after")
    def _unique_ids(self) -> RoutingConfig:
        ids = [r.id for r in self.rules]
        twice = sorted({i for i in ids if ids.count(i) > 1})
        if twice:
            raise ValueError(f"rule ids defined twice: {', '.join(twice)}")
        return self

    @model_validator(mode="after")
    def _a_profile_per_route(self) -> RoutingConfig:
        missing = [r.value for r in Route if r not in self.profiles]
        if missing:
            raise ValueError(f"routes without a profile: {', '.join(missing)}")
        return self

    def profile(self, route: Route | str) -> RouteProfile:
        """The profile of ``route``; a value that is not a route reads as CHAT (the safe side)."""
        key = route if isinstance(route, Route) else Route.__members__.get(str(route), Route.CHAT)
        return self.profiles[key]

    def ordered_rules(self) -> list[Rule]:
        """Highest priority first; equal priorities keep the file's order (``sorted`` is stable)."""
        return sorted(self.rules, key=lambda r: -r.priority)


def parse_routing_config(data: Any, *, source: str = "routing config") -> RoutingConfig:
    """``data`` validated, or a ``ConfigError`` that names the first problems."""
    try:
        return RoutingConfig.model_validate(data)
    except ValidationError as exc:
        details = "; ".join(
            f"{'.'.join(str(x) for x in e['loc']) or '(root)'}: {e['msg']}" for e in exc.errors()[:8]
        )
        raise ConfigError(f"{source}: invalid routing configuration: {details}") from exc


@lru_cache(maxsize=4)
def _load(path: str) -> RoutingConfig:
    file = Path(path)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"routing file {file}: {exc}") from exc
    return parse_routing_config(data, source=str(file))


def load_routing_config(path: str | Path | None = None) -> RoutingConfig:
    """The configuration of ``path``, ``CHARTER_ROUTING`` or the packaged file (cached per path)."""
    return _load(str(path or config_files.current().routing or ROUTING_FILE))
