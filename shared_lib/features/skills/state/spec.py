"""A skill as declared (seed 001 §23.1): what it is called, what it takes, what it does.

A skill is either fixed logic (``kind="code"``: Python defining ``run(input, view)`` that returns
JSON, run only in the sandbox) or a prompt (``kind="prompt"``: a ``string.Template`` rendered from
the input; the text goes to the phrasing step). Users read its Japanese ``display_name`` and
parameter labels, never its internal names. In the registry it is ``skill_<name>``, so it can
never shadow a built-in tool. ``sha256`` is the implementation's hash: a version's identity.
``reads`` declares the organisation's collections its code reads (validated against
``config/skills.json``'s ``readable``); ``level`` is who may use it: its ``min_level`` raised to
the level of every collection it reads (reading salaries makes it a level-6 tool).

>>> spec = SkillSpec.model_validate(EXAMPLE)
>>> spec.tool_name, spec.sha256[:8]
('skill_add_numbers', '7e626017')
"""

from __future__ import annotations

import hashlib
import json
import re
import string
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from shared_lib.features.skills.state.config import packaged
from shared_lib.privacy.sanitizer import Sanitizer
from shared_lib.tools.input_schema import validate_input_schema, value_problems

TOOL_PREFIX = "skill_"
MAX_CODE_BYTES = 20_000
MAX_EXAMPLES = 10
_JAPANESE = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uff66-\uff9f]")
Label = Annotated[str, Field(min_length=1, max_length=40)]


def implementation_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class SkillExample(BaseModel):
    """One input and the output it must give (code: the JSON ``run`` returns; prompt: the text)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    input: dict[str, Any]
    output: Any


class SkillSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{1,40}$")]
    display_name: Label
    description: Annotated[str, Field(min_length=1, max_length=1024)]
    input_schema: dict[str, Any]
    parameter_display: dict[str, Label] = Field(default_factory=dict)
    value_display: dict[str, dict[str, Label]] = Field(default_factory=dict)  # an enum's values
    # what makes the brain pick it (seed 000 §7.1b: 3-5 trigger examples, legacy keywords)
    trigger_examples: Annotated[list[Annotated[str, Field(min_length=1)]], Field(min_length=3, max_length=5)]
    keywords: Annotated[list[Annotated[str, Field(min_length=1)]], Field(min_length=1, max_length=10)]
    min_level: Annotated[int, Field(ge=2, le=6)] = 2
    # the organisation's collections its code reads (``config/skills.json`` ``readable``): the
    # sandbox serves only these, and the skill's level is at least each one's level
    reads: Annotated[list[Annotated[str, Field(min_length=1)]], Field(max_length=10)] = Field(
        default_factory=list
    )
    kind: Literal["code", "prompt"]
    implementation: Annotated[str, Field(min_length=1)]
    examples: Annotated[list[SkillExample], Field(min_length=1, max_length=MAX_EXAMPLES)]
    author: Annotated[str, Field(min_length=1, max_length=128)]  # "model" or a person's id
    sha256: str = ""  # filled from the implementation; a given one must match it

    @model_validator(mode="after")
    def _declared(self) -> SkillSpec:
        digest = implementation_hash(self.implementation)
        if self.sha256 and self.sha256 != digest:
            raise ValueError("sha256 does not match the implementation")
        object.__setattr__(self, "sha256", digest)
        if len(self.implementation.encode("utf-8")) > MAX_CODE_BYTES:
            raise ValueError(f"implementation is over {MAX_CODE_BYTES} bytes")
        if not _JAPANESE.search(self.display_name):
            raise ValueError("display_name is what users read: it must be Japanese")
        problems = validate_input_schema(self.input_schema)
        readable = packaged().readable
        problems += [
            f"reads: {c!r} is not a collection a skill may read" for c in self.reads if c not in readable
        ]
        if len(set(self.reads)) != len(self.reads):
            problems.append("reads: a collection is named twice")
        props = self.input_schema.get("properties") if not problems else {}
        for param, prop in (props or {}).items():
            label = self.parameter_display.get(param, "")
            if not _JAPANESE.search(label):
                problems.append(f"{param}: no Japanese label in parameter_display")
            shown = self.value_display.get(param, {})
            problems += [f"{param}: value {v!r} has no label" for v in prop.get("enum", []) if v not in shown]
        problems += [f"{p}: labels no parameter" for p in self.parameter_display if p not in (props or {})]
        for i, example in enumerate(self.examples):
            problems += [f"examples[{i}]: {p}" for p in value_problems(self.input_schema, example.input)]
        if self.kind == "prompt":
            problems += _template_problems(self.implementation, set(props or {}))
        if problems:
            raise ValueError("; ".join(problems[:8]))
        return self

    @property
    def tool_name(self) -> str:
        return TOOL_PREFIX + self.name

    @property
    def level(self) -> int:
        """Who may use it: its ``min_level`` raised to the level of every collection it reads."""
        readable = packaged().readable
        return max([self.min_level, *(readable[c] for c in self.reads)])


# every field a person or the model writes; ``name`` is a pattern-checked identifier
_WRITTEN = (
    "implementation",
    "examples",
    "display_name",
    "description",
    "input_schema",
    "parameter_display",
    "value_display",
    "trigger_examples",
    "keywords",
)


def secret_fields(spec: SkillSpec, sanitizer: Sanitizer | None = None) -> list[str]:
    """The fields of ``spec`` in which the sanitizer's detectors find a secret or a personal value.

    A skill is stored unmasked (masking would change the code its hash names), so such a spec is
    refused rather than stored.
    """
    detector = sanitizer or Sanitizer.default()
    found = []
    for field in _WRITTEN:
        value = getattr(spec, field)
        if field == "examples":
            value = [e.model_dump(mode="json") for e in value]
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        if detector.contains_secret(text):
            found.append(field)
    return found


def _template_problems(text: str, params: set[str]) -> list[str]:
    template = string.Template(text)
    if not template.is_valid():
        return ["implementation: not a valid template"]
    unknown = set(template.get_identifiers()) - params
    return [f"implementation: ${name} is not a parameter" for name in sorted(unknown)]


def render_prompt(text: str, values: dict[str, Any]) -> str:
    """A prompt skill's text: the template with the input's values (a missing optional one: empty)."""
    template = string.Template(text)
    names = template.get_identifiers()
    return template.substitute({n: "" if values.get(n) is None else str(values[n]) for n in names})


EXAMPLE: dict[str, Any] = {
    "name": "add_numbers",
    "display_name": "数の合計",
    "description": "二つの数を足す",
    "input_schema": {
        "type": "object",
        "properties": {
            "a": {"type": "integer", "description": "一つ目の数"},
            "b": {"type": "integer", "description": "二つ目の数"},
        },
        "required": ["a", "b"],
    },
    "parameter_display": {"a": "一つ目の数", "b": "二つ目の数"},
    "trigger_examples": ["3と4を足して", "合計を出して", "数を足し算して"],
    "keywords": ["足す", "合計"],
    "kind": "code",
    "implementation": "def run(input, view):\n    return {'sum': input['a'] + input['b']}\n",
    "examples": [{"input": {"a": 1, "b": 2}, "output": {"sum": 3}}],
    "author": "model",
}
