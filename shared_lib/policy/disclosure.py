"""Whether a text DISCLOSES a value, read by the grammar ``config/disclosure.json`` (issue 34).

A topic word is no disclosure (「今期の人事評価は5段階評価です」「パスワードは定期的に変更して
ください」); a value bound to it is: a grade, an amount or a verdict about a person
(「田中さんの評価はC」), a credential's value (「PW: Abc123!」), a deal's terms (「A社の買収が
決まった」). The grammar says what a person reference, an attribute, a value shape and a deal
are; this module is the small deterministic matcher over it (see the file's ``description``
for the relations). Text is read NFKC-normalised, one clause at a time.

>>> g = load_disclosure_grammar()
>>> g.personal("今期の人事評価は5段階評価です") is None, g.personal("田中さんの評価はCです").name
(True, 'evaluation')
>>> g.credential("password_disclosure", "パスワードは定期的に変更してください"), g.credential("password_disclosure", "PW：Abc123#")
(None, 'Abc123#')
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from shared_lib.policy.values import checked_regexes

GRAMMAR_FILE = Path(__file__).resolve().parent.parent / "config" / "disclosure.json"
_CLAUSE = re.compile(r"[。\n]|[!?](?![!-~])")
_I = re.IGNORECASE


@lru_cache(maxsize=512)
def _rx(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, flags)


def normalised(text: str) -> str:
    """``text`` as the grammar reads it: full-width digits, letters and signs half-width."""
    return unicodedata.normalize("NFKC", text)


def clauses(text: str) -> list[str]:
    return [c for c in _CLAUSE.split(normalised(text)) if c.strip()]


class _G(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Shape(_G):
    pattern: Annotated[str, Field(min_length=1)]
    person_only: bool = False  # discloses only about a named person (「評価が高い」 of a restaurant is none)


class Attribute(_G):
    name: Annotated[str, Field(min_length=1)]
    words: Annotated[str, Field(min_length=1)]
    suffixes: str = ""
    values: list[str]


class Condition(_G):
    """A value about a named person in a clause that says what it is (「小林さんがうつ病で休職」)."""

    name: Annotated[str, Field(min_length=1)]
    values: list[str]
    context: Annotated[str, Field(min_length=1)]


class Verdicts(_G):
    name: str
    words: str
    not_after: str
    done: str


class Credential(_G):
    name: Annotated[str, Field(min_length=1)]
    words: Annotated[str, Field(min_length=1)]
    min_length: Annotated[int, Field(ge=1)] = 4


class Deal(_G):
    name: Annotated[str, Field(min_length=1)]
    words: Annotated[str, Field(min_length=1)]
    needs_marker: bool = False  # terms that are confidential only where the text says so


class Person(_G):
    honorifics: str  # さん, 様, くん: a noun may follow at once (「増田さん評価C」)
    titles: str  # 部長, 課長: a title followed by a noun is a word of its own (「部長会議」)
    name: str
    groups: str
    pronouns: str
    addressee: str
    self: str
    attached: str  # the particle that makes a name the owner of what follows (の, は, って)
    attached_gap: str  # what may stand between it and the attribute (「佐藤さんの今期の査定」)


@dataclass(frozen=True)
class Found:
    """One disclosure: the policy pattern name it is reported as and whom it is about."""

    name: str
    excerpt: str
    subject: str | None = None  # the person's name (no honorific), a pronoun, or None (implied)


@dataclass(frozen=True)
class _Ref:
    start: int
    end: int  # after the particle when attached
    subject: str
    attached: bool


class DisclosureGrammar(_G):
    description: str = ""
    window: Annotated[int, Field(ge=1, le=200)] = 24
    scopes: list[str] = Field(default_factory=lambda: ["confirmation", "text", "parameters"])
    person: Person
    values: dict[str, Shape]
    attributes: list[Attribute]
    link: str
    generic: str
    gap_breaks: str
    range_after: str  # a value that starts or bounds a range is a rule's, not a person's (「30万円から」)
    grade_before: str
    grade_before_not_after: str
    conditions: list[Condition] = Field(default_factory=list)
    verdicts: Verdicts
    credentials: list[Credential]
    credential_link: str
    credential_value: str
    credential_not_after: str
    credential_not_value: str
    credential_examples: str
    # a token of letters only may be a product's name (「パスワードはOktaを使って」); one with
    # digits or signs is read as a value whatever particle follows (「hunter2abc を共有」)
    credential_word: str
    credential_word_not_after: str
    deals: list[Deal]
    deal_not_after: str
    deal_terms: str
    deal_timing: str
    deal_events: str
    deal_public: str
    confidential_markers: str

    @model_validator(mode="after")
    def _valid(self) -> DisclosureGrammar:
        named = {v for a in self.attributes for v in a.values} | {
            v for c in self.conditions for v in c.values
        }
        unknown = sorted(named - set(self.values))
        if unknown:
            raise ValueError(f"disclosure grammar: attributes name unknown value shapes {unknown}")
        checked_regexes(_patterns(self.model_dump()))
        checked_regexes(self._link(a) for a in self.attributes)
        return self

    # -- people ---------------------------------------------------------------------------
    def _people(self, clause: str) -> list[_Ref]:
        p = self.person
        out = []
        named = _rx(rf"(?P<n>{p.name})(?:{p.honorifics}|(?:{p.titles})(?![一-龥ァ-ヶー]))")
        for m in named.finditer(clause):
            if not _rx(rf"^(?:{p.groups})$|(?:{p.groups})$").search(m.group("n")):
                out.append(self._ref(clause, m, m.group("n")))
        for m in _rx(rf"(?:{p.pronouns})(?![一-龥ァ-ヶー])").finditer(clause):
            who = "@addressee" if _rx(rf"^(?:{p.addressee})$").match(m.group(0)) else m.group(0)
            out.append(self._ref(clause, m, who))
        return sorted(out, key=lambda r: r.start)

    def _ref(self, clause: str, m: re.Match[str], who: str) -> _Ref:
        particle = _rx(self.person.attached).match(clause, m.end())
        return _Ref(m.start(), particle.end() if particle else m.end(), who, particle is not None)

    def _owns(self, ref: _Ref, clause: str, word_start: int) -> bool:
        """Whether the person is the owner of the attribute word starting at ``word_start``."""
        gap = clause[ref.end : word_start]
        return ref.attached and ref.end <= word_start and _rx(self.person.attached_gap).match(gap) is not None

    # -- personal values ------------------------------------------------------------------
    def personal(self, text: str) -> Found | None:
        """The first value about a person (or implied one) that ``text`` discloses."""
        for clause in clauses(text):
            found = self._personal_in(clause) or self._condition_in(clause) or self._verdict_in(clause)
            if found is not None:
                return found
        return None

    def _personal_in(self, clause: str) -> Found | None:
        people = self._people(clause)
        own = _rx(self.person.self).search(clause) is not None
        generic = _rx(self.generic).search(clause) is not None
        for attr in self.attributes:
            for m in _rx(attr.words).finditer(clause):
                bound = self._bound(attr, clause, m.start(), m.end())
                if bound is None:
                    continue
                shape, at, stop = bound
                before = [r for r in people if r.start < max(at, m.start())]
                owners = [r for r in before if self._owns(r, clause, m.start())]
                if owners:
                    return Found(attr.name, clause, owners[-1].subject)
                ranged = _rx(self.range_after).match(clause, stop) is not None
                if self.values[shape].person_only or own or generic or ranged:
                    continue
                return Found(attr.name, clause, before[-1].subject if before else None)
        return None

    def _bound(self, attr: Attribute, clause: str, start: int, end: int) -> tuple[str, int, int] | None:
        """The value shape bound to the attribute word at ``clause[start:end]``, where it starts and ends."""
        before = "grade" in attr.values and _rx(self.grade_before).search(clause, 0, start)
        if before and not _rx(self.grade_before_not_after).match(clause, end):
            return "grade", start - 1, end
        link = _rx(self._link(attr)).match(clause, end)
        at = link.end() if link else end
        if clause.startswith("の", at):  # 「評価ランクの定義」: the attribute names another thing
            return None
        found: tuple[str, re.Match[str]] | None = None
        for name in attr.values:
            rx = _rx(self.values[name].pattern)
            hit = rx.match(clause, at) if at == end else rx.search(clause, at, at + self.window)
            if hit and (found is None or hit.start() < found[1].start()):
                found = (name, hit)
        if found is None or _rx(self.gap_breaks).search(clause, at, found[1].start()):
            return None
        return found[0], found[1].start(), found[1].end()

    def _link(self, attr: Attribute) -> str:
        return self.link.replace("{suffixes}", attr.suffixes or "(?!)")

    def _condition_in(self, clause: str) -> Found | None:
        for cond in self.conditions:
            if not _rx(cond.context).search(clause):
                continue
            for name in cond.values:
                for hit in _rx(self.values[name].pattern).finditer(clause):
                    attached = [r for r in self._people(clause) if r.attached and r.start < hit.start()]
                    if attached:
                        return Found(cond.name, clause, attached[-1].subject)
        return None

    def _verdict_in(self, clause: str) -> Found | None:
        v = self.verdicts
        for m in _rx(v.words).finditer(clause):
            if _rx(v.not_after).match(clause, m.end()):
                continue
            # an action is about whoever the clause names before it, attached or addressed
            # (「原田くん、出勤停止1週間」)
            named = [r for r in self._people(clause) if r.start < m.start()]
            if named:
                return Found(v.name, clause, named[-1].subject)
            done = _rx(rf"(?:(?!ない|ず|せん)[^。]){{0,6}}?(?:{v.done})").match(clause, m.end())
            if done and not _rx(self.generic).search(clause):
                return Found(v.name, clause)
        return None

    # -- credentials ----------------------------------------------------------------------
    def credential(self, name: str, text: str) -> str | None:
        """The value of credential ``name`` that ``text`` gives, or ``None``."""
        for cred in self.credentials:
            if cred.name != name:
                continue
            for clause in clauses(text):
                value = next(self._credential_values(cred, clause), None)
                if value is not None:
                    return value
        return None

    def _credential_values(self, cred: Credential, clause: str) -> Iterator[str]:
        words = _rx(rf"(?<![ァ-ヶーA-Za-z])(?:{cred.words})(?![ァ-ヶーa-z])", _I)
        for m in words.finditer(clause):
            link = _rx(self.credential_link).match(clause, m.end())
            at = link.end() if link else m.end()
            value = _rx(self.credential_value).match(clause, at)
            if value is None:
                continue
            token = value.group(0)
            after = clause[value.end() :].lstrip("\"'`」』)] ")
            if (
                len(token) >= cred.min_length
                and not _rx(self.credential_not_value).fullmatch(token)
                and not _rx(self.credential_not_after).match(after)
                and not _rx(self.credential_examples).match(after)
                and not (
                    _rx(self.credential_word).fullmatch(token)
                    and _rx(self.credential_word_not_after).match(after)
                )
            ):
                yield token

    # -- deals ----------------------------------------------------------------------------
    def deal(self, text: str) -> Found | None:
        """The first deal whose terms ``text`` discloses."""
        marked = _rx(self.confidential_markers, _I).search(normalised(text)) is not None
        for clause in clauses(text):
            if _rx(self.deal_public).search(clause):
                continue
            event = _rx(self.deal_events).search(clause) is not None
            for deal in self.deals:
                for m in _rx(deal.words, _I).finditer(clause):
                    if _rx(self.deal_not_after).match(clause, m.end()) or (deal.needs_marker and not marked):
                        continue
                    rest = clause[: m.start()] + " " + clause[m.end() :]
                    strong = marked or _rx(self.deal_terms).search(rest) is not None
                    if strong or (not event and _rx(self.deal_timing).search(rest)):
                        return Found(deal.name, clause)
        return None

    def names(self) -> list[str]:
        """Every pattern name a finding of this grammar is reported as."""
        return [
            *(a.name for a in self.attributes),
            self.verdicts.name,
            *(c.name for c in self.credentials),
            *(d.name for d in self.deals),
        ]


def _patterns(data: Any) -> Iterator[str]:
    """Every regex of the grammar's data (the strings that are no names, numbers or prose)."""
    skip = {"name", "description", "scopes", "values", "link"}
    if isinstance(data, dict):
        for key, value in data.items():
            if key in skip and not isinstance(value, dict):
                continue
            yield from _patterns(value)
    elif isinstance(data, list):
        for item in data:
            yield from _patterns(item)
    elif isinstance(data, str) and data:
        yield data


def parse_disclosure_grammar(data: Any) -> DisclosureGrammar:
    """The grammar from an object, or from a file named by a string (relative: the packaged folder)."""
    if isinstance(data, str):
        file = Path(data) if Path(data).is_absolute() else GRAMMAR_FILE.parent / data
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ValueError(f"disclosure grammar {file}: {exc}") from exc
    return DisclosureGrammar.model_validate(data)


@lru_cache(maxsize=4)
def load_disclosure_grammar(path: str | None = None) -> DisclosureGrammar:
    return parse_disclosure_grammar(path or GRAMMAR_FILE.name)
