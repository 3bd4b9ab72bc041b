"""The providers' fine-tuning line formats, as pydantic models every written line must parse as.

* OpenAI chat fine-tuning: ``{"messages": [{"role": "system"|"user"|"assistant", "content": str},
  …]}``, every content a non-empty string, the last message the assistant's.
* Anthropic (Claude fine-tuning on Amazon Bedrock): ``{"system": str, "messages": [{"role":
  "user"|"assistant", "content": str}, …]}``, alternating from the user, ending with the assistant.

The assistant's content is the accepted target as the brain must produce it: the proposal JSON
in its output schema (``proposal.Proposal``), so an example teaches the proposing, not only the
phrasing. The user's content is the compact context the brain was given and the message.

>>> line = build_line("openai", system="指示", user="こんにちは", assistant='{"output_type": "text_response"}')
>>> parse_line("openai", line).messages[-1].role
'assistant'
>>> parse_line("anthropic", build_line("anthropic", system="指示", user="こんにちは", assistant="{}")).system
'指示'
"""

from __future__ import annotations

import json
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from shared_lib.errors import ArgumentError

FORMATS = ("anthropic", "openai")
Content = Annotated[str, Field(min_length=1)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class OpenAIMessage(_Strict):
    role: Literal["system", "user", "assistant"]
    content: Content

    @model_validator(mode="after")
    def _not_blank(self) -> OpenAIMessage:
        if not self.content.strip():
            raise ValueError("content is blank")
        return self


class OpenAIExample(_Strict):
    messages: Annotated[list[OpenAIMessage], Field(min_length=2)]

    @model_validator(mode="after")
    def _ends_with_assistant(self) -> OpenAIExample:
        if self.messages[-1].role != "assistant":
            raise ValueError("the last message is the assistant's")
        if any(m.role == "system" for m in self.messages[1:]):
            raise ValueError("a system message comes first only")
        return self


class AnthropicMessage(_Strict):
    role: Literal["user", "assistant"]
    content: Content

    @model_validator(mode="after")
    def _not_blank(self) -> AnthropicMessage:
        if not self.content.strip():
            raise ValueError("content is blank")
        return self


class AnthropicExample(_Strict):
    system: Content
    messages: Annotated[list[AnthropicMessage], Field(min_length=2)]

    @model_validator(mode="after")
    def _alternates(self) -> AnthropicExample:
        for i, message in enumerate(self.messages):
            if message.role != ("user" if i % 2 == 0 else "assistant"):
                raise ValueError("messages alternate user/assistant, starting with the user")
        if self.messages[-1].role != "assistant":
            raise ValueError("the last message is the assistant's")
        return self


def build_line(fmt: str, *, system: str, user: str, assistant: str) -> str:
    """One JSONL line of ``fmt``, validated by its model (``ValidationError`` if it is not one)."""
    if fmt == "openai":
        example: OpenAIExample | AnthropicExample = OpenAIExample.model_validate(
            {
                "messages": [
                    {"role": "system", "content": system},
                    {"role": "user", "content": user},
                    {"role": "assistant", "content": assistant},
                ]
            }
        )
    elif fmt == "anthropic":
        example = AnthropicExample.model_validate(
            {
                "system": system,
                "messages": [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}],
            }
        )
    else:
        raise ArgumentError(f"format is one of {', '.join(FORMATS)}")
    return json.dumps(example.model_dump(mode="json"), ensure_ascii=False)


def parse_line(fmt: str, line: str) -> OpenAIExample | AnthropicExample:
    """A written line read back as its provider's format (raises on anything else)."""
    model = OpenAIExample if fmt == "openai" else AnthropicExample
    return model.model_validate_json(line)
