"""The eval set: one JSON object per line, validated by ``Case`` and checked against the house.

A case says who speaks (a demo person), when (``now``), what was said before in the same room
(``previous``: to leave a confirmation pending, for one) and what the charter should end with:

* ``route`` — the router's primary route (seed 003);
* ``output_type`` — what the brain proposed (``tool_call``, ``text_response``, ``clarification_needed``);
* ``tool`` and ``parameters`` — the first tool call and only the parameters that matter. A
  value is compared whole (strings after NFKC and trimming); ``{"contains": "…"}`` asks for a
  part of it; an ISO date (``2026-11-20``) is compared with the value read as a date against
  ``now`` (「明日」 on 11/19 is 2026-11-20);
* ``verdict`` — the guardian's action and, where it matters, its reason code;
* ``authorization`` — the gate's result and reason code;
* ``clarification`` — whether the user is asked to clarify;
* ``executed`` — whether a tool was run at all (an injection must not get one run);
* ``reply_contains`` — what the reply of the last turn must say: every item must appear (after
  NFKC, case folded), an item that is a list by any one of its alternatives
  (``["ウル", ["11月30日", "11/30"]]``: all of, each any of);
* ``reply_not_contains`` — what that reply must not say (none may appear);
* ``answers_question`` — ``true``: the reply is not one of the persona's generic fallbacks (the
  catalogue messages and phrases of ``config/eval/fallbacks.json``: 「よく分からなかった」, the
  small-talk catch-all); ``false``: it is one (a question the product cannot answer may say so).

Two optional fixtures reach branches a user's words cannot reach with the shipped brain and
policy (``fixtures``):

* ``proposal`` — what the brain proposes for the last turn, fixed: a full proposal as the LLM
  would submit it (``output_type``, ``reasoning``, ``confidence``, ``tool_calls`` …). The case
  then measures the deciding layers (the brain's validation and constitution, the guardian, the
  gate, the executor, the responder), not the brain: it runs identically for every brain under
  test and is scored in its own group, ``deciding`` (``Case.group``), which the run reports
  apart from each brain's own figures;
* ``policy`` — a patch of the product's policy for the case (a teaching, a tool's danger class),
  merged into ``policy.json`` and parsed as the product parses it; a patch that does not parse
  fails the load. A previous turn may run under its own (``PreviousTurn.policy``).

``check_cases`` fails on a tool, a parameter, a route, a reason code or a person the product
does not have, so the set cannot drift from the registry unnoticed.

>>> case = Case.model_validate({"id": "x", "category": "small_talk", "utterance": "おはよう",
...     "expected": {"output_type": "text_response"}})
>>> case.person, case.expected.tool
('u-suzuki', None)
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from shared_lib.brain.validation import InvalidProposal, validate_proposal
from shared_lib.demo_data import DEMO_USER, PEOPLE
from shared_lib.errors import ConfigError
from shared_lib.evals.fixtures import patched_policy
from shared_lib.policy.reasons import AUTH_REASONS, GUARDIAN_REASONS, PASS
from shared_lib.routing.model import Route
from shared_lib.tools.registry import ToolRegistry

EVAL_DIR = Path(__file__).resolve().parents[1] / "config" / "eval"
BRAIN_SET = EVAL_DIR / "brain_eval.jsonl"  # the templated coverage suite (one case per branch)
PEOPLE_SET = EVAL_DIR / "people_eval.jsonl"  # written as people write in ChatWork, Slack, LINE
DATASET = EVAL_DIR  # the default run: every ``*.jsonl`` of the folder, both sets
FALLBACKS = EVAL_DIR / "fallbacks.json"  # what ``answers_question`` counts as a generic fallback
DEFAULT_NOW = "2026-11-18T10:00:00+09:00"  # a Wednesday
# Categories besides ``tool:<registered tool>`` and ``guardian:<guardian reason code>``.
DECIDING = "deciding"  # the group of the cases with a fixed proposal
PLAIN_CATEGORIES = frozenset(
    {
        "ambiguity",
        "dates",
        "injection",
        "small_talk",
        "route",
        "authorization",
        "confirmation",
        # the people's set: greetings (with お願い or not), questions it can answer, questions it
        # cannot, hostile text, bulk deletions, confidential values disclosed, and HR/IT/finance
        # words used innocently (an announcement of 人事評価's schedule is no disclosure)
        "greeting",
        "question",
        "cannot_answer",
        "hostile",
        "bulk_delete",
        "disclosure",
        "innocent_vocabulary",
        # fixed proposals whose reasoning reports the user's words or defers to the system, in
        # every style (である調, です調, bullets, English): the deciding layers must not block them
        "reasoning_style",
    }
)
# the categories whose every case must say what its reply should be (reply labels)
REPLY_LABELLED = frozenset({"small_talk", "greeting", "question", "cannot_answer"})
OutputType = Literal["tool_call", "text_response", "clarification_needed"]
Text = Annotated[str, Field(min_length=1)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Contains(_Strict):
    """A part the observed value must contain (free text: a task's body, a message)."""

    contains: Text


ParamValue = Contains | str | int | bool | list[str]


class ExpectedVerdict(_Strict):
    """``covers``: reason codes a confirmation must also show (the tree's later confirm-level concerns)."""

    action: Literal["allow", "confirm", "block", "modify"]
    reason: str | None = None
    covers: list[str] = Field(default_factory=list)


class ExpectedAuthorization(_Strict):
    result: Literal["allowed", "denied", "not_applicable"]
    reason: str | None = None


class Expected(_Strict):
    route: Route | None = None
    output_type: OutputType | None = None
    tool: str | None = None
    parameters: dict[str, ParamValue] = Field(default_factory=dict)
    verdict: ExpectedVerdict | None = None
    authorization: ExpectedAuthorization | None = None
    clarification: bool | None = None
    executed: bool | None = None
    reply_contains: list[Text | Annotated[list[Text], Field(min_length=1)]] = Field(default_factory=list)
    reply_not_contains: list[Text] = Field(default_factory=list)
    answers_question: bool | None = None

    @property
    def reply_labelled(self) -> bool:
        """Whether the case says anything about the reply's text."""
        return bool(self.reply_contains or self.reply_not_contains) or self.answers_question is not None

    @model_validator(mode="after")
    def _something_expected(self) -> Expected:
        if self.parameters and self.tool is None:
            raise ValueError("parameters are expected of a tool: name the tool")
        fields = (
            self.route,
            self.output_type,
            self.tool,
            self.verdict,
            self.authorization,
            self.clarification,
            self.executed,
        )
        if all(f is None for f in fields) and not self.reply_labelled:
            raise ValueError("a case must expect something")
        return self


def _parsed(patch: dict[str, Any] | None, source: str) -> None:
    """A policy patch must give a policy the product would load."""
    if patch is not None:
        try:
            patched_policy(patch, source=source)
        except ConfigError as exc:  # a ValueError, so the line's error names the line
            raise ValueError(str(exc)) from exc


class PreviousTurn(_Strict):
    """Something said before the case's utterance, in the same room (by ``person``, default the case's).

    ``policy``: the patch this turn runs under instead of the case's (``{}``: the shipped policy),
    as when the policy changes between a confirmation's question and its answer.
    """

    text: Text
    person: str | None = None
    policy: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _policy_parses(self) -> PreviousTurn:
        _parsed(self.policy, "previous turn: policy")
        return self


class Case(_Strict):
    id: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_.\-]*$")]
    category: Text
    utterance: Text
    person: str = DEMO_USER
    now: datetime = datetime.fromisoformat(DEFAULT_NOW)
    previous: list[PreviousTurn] = Field(default_factory=list)
    note: str = ""
    proposal: dict[str, Any] | None = None
    policy: dict[str, Any] | None = None
    expected: Expected

    @model_validator(mode="after")
    def _policy_parses(self) -> Case:
        _parsed(self.policy, f"case {self.id}: policy")
        return self

    @property
    def group(self) -> str:
        """``tool:chatwork_task_create`` -> ``tool``; any case with a fixed proposal -> ``deciding``."""
        return DECIDING if self.proposal is not None else self.category.split(":", 1)[0]

    @property
    def kind(self) -> str:
        """What the category is about: ``guardian:date.past`` -> ``guardian``."""
        return self.category.split(":", 1)[0]


def problems(case: Case, registry: ToolRegistry) -> list[str]:
    """What ``case`` names that the product does not have."""
    found: list[str] = []
    people = {p["user_id"] for p in PEOPLE}
    kind, _, name = case.category.partition(":")
    if kind == "tool" and name not in registry:
        found.append(f"category names unknown tool {name!r}")
    elif kind == "guardian" and name not in GUARDIAN_REASONS:
        found.append(f"category names unknown guardian reason {name!r}")
    elif kind not in ("tool", "guardian") and case.category not in PLAIN_CATEGORIES:
        found.append(f"unknown category {case.category!r}")
    if case.category in REPLY_LABELLED and not case.expected.reply_labelled:
        found.append(f"a {case.category} case must label its reply (reply_contains, answers_question …)")
    for who in [case.person, *(t.person for t in case.previous if t.person)]:
        if who not in people:
            found.append(f"unknown person {who!r}")
    if case.proposal is not None:
        found += _proposal_problems(case.proposal, registry)
    exp = case.expected
    if exp.tool is not None:
        spec = registry.get(exp.tool)
        if spec is None:
            found.append(f"unknown tool {exp.tool!r}")
        else:
            found += [
                f"tool {exp.tool} has no parameter {key!r}"
                for key in exp.parameters
                if key not in spec.params.model_fields
            ]
    if exp.verdict:
        named = [exp.verdict.reason] if exp.verdict.reason else []
        found += [
            f"unknown guardian reason {code!r}"
            for code in [*named, *exp.verdict.covers]
            if code not in {*GUARDIAN_REASONS, PASS}
        ]
    if exp.authorization and exp.authorization.reason and exp.authorization.reason not in AUTH_REASONS:
        found.append(f"unknown authorization reason {exp.authorization.reason!r}")
    return found


def _proposal_problems(raw: dict[str, Any], registry: ToolRegistry) -> list[str]:
    """A fixed proposal must be one the brain's validation accepts, naming declared parameters
    only (the LLM arm would drop an undeclared one, so the case would not test what it says)."""
    found = []
    for call in raw.get("tool_calls") or []:
        name = call.get("tool_name") if isinstance(call, dict) else call
        spec = registry.get(str(name))
        if spec is None:
            found.append(f"proposal names unknown tool {name!r}")
            continue
        found += [
            f"proposal: tool {spec.name} has no parameter {key!r}"
            for key in call.get("parameters") or {}
            if key not in spec.params.model_fields
        ]
    if not found:
        try:
            validate_proposal(raw, registry)
        except InvalidProposal as exc:
            found.append(f"invalid proposal: {exc}")
    return found


def parse_lines(lines: Iterable[str], source: str = "dataset") -> list[Case]:
    """Cases of JSON lines (blank lines and ``//`` comments skipped); ``ConfigError`` on the first bad one."""
    cases: list[Case] = []
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("//"):
            continue
        try:
            cases.append(Case.model_validate(json.loads(line)))
        except (ValueError, ValidationError) as exc:
            raise ConfigError(f"{source}:{number}: {exc}") from exc
    return cases


def load_cases(path: Path | str = DATASET) -> list[Case]:
    """A file of cases, or a directory of ``*.jsonl`` files (read in name order)."""
    p = Path(path)
    files = sorted(p.glob("*.jsonl")) if p.is_dir() else [p]
    if not files or not all(f.is_file() for f in files):
        raise ConfigError(f"no eval cases at {p}")
    return [c for f in files for c in parse_lines(f.read_text(encoding="utf-8").splitlines(), str(f))]


def check_cases(cases: list[Case], registry: ToolRegistry) -> list[str]:
    """Every problem of the set: duplicate ids and what each case names that does not exist."""
    found: list[str] = []
    seen: set[str] = set()
    for case in cases:
        if case.id in seen:
            found.append(f"{case.id}: duplicate id")
        seen.add(case.id)
        found += [f"{case.id}: {p}" for p in problems(case, registry)]
    return found


def describe(value: Any) -> str:
    """A parameter expectation as one short text (reports)."""
    if isinstance(value, Contains):
        return f"contains {value.contains!r}"
    return repr(value)
