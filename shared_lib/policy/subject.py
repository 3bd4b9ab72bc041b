"""What the guardian judges, read once from a proposal: texts by scope, tool calls, confidence."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from shared_lib.policy.values import strings_in
from shared_lib.turn.proposal import ClarificationProposal, Proposal, TextResponseProposal, ToolCallProposal

Origin = Literal["proposer", "system"]
_QUOTED = re.compile(r"「[^」]*」|『[^』]*』|“[^”]*”|\"[^\"]*\"")


def unquoted(text: str) -> str:
    """``text`` without quoted words: quoting the user is not the proposer's own judgement."""
    return _QUOTED.sub(" ", text)


@dataclass(frozen=True)
class Subject:
    kind: str
    reasoning: str  # every reasoning field, for pattern checks
    reasoning_summary: str  # what counts as "the reasoning" for the mandatory-reasoning rule
    confirmation: str  # the proposer's confirmation question
    text: str  # what the user would read: a text answer, or a clarification and its options
    calls: tuple[tuple[str, dict[str, Any]], ...]
    confidence: float
    needs_confirmation: bool
    origin: Origin = "proposer"

    @classmethod
    def of(cls, proposal: Proposal, origin: Origin = "proposer") -> Subject:
        root = proposal.root
        reasoning = "\n".join(strings_in(root.reasoning.model_dump()))
        calls: tuple[tuple[str, dict[str, Any]], ...] = ()
        text = confirmation = ""
        needs = False
        if isinstance(root, ToolCallProposal):
            calls = tuple((c.tool_name, dict(c.parameters)) for c in root.tool_calls)
            confirmation, needs = root.confirmation_question, root.needs_confirmation
        elif isinstance(root, TextResponseProposal):
            text = root.text_response
        elif isinstance(root, ClarificationProposal):
            text = "\n".join([root.clarification_question, *root.options])
        return cls(
            kind=root.output_type,
            reasoning=reasoning,
            reasoning_summary=root.reasoning_text(),
            confirmation=confirmation,
            text=text,
            calls=calls,
            confidence=root.confidence.overall,
            needs_confirmation=needs,
            origin=origin,
        )

    def scoped(self, scopes: Sequence[str], *, parameters_of: set[int] | None = None) -> list[str]:
        """The texts a pattern with ``scopes`` looks at (parameters of the calls ``parameters_of``)."""
        out = []
        if "reasoning" in scopes and self.reasoning:
            out.append(self.reasoning)
        if "confirmation" in scopes and self.confirmation:
            out.append(self.confirmation)
        if "text" in scopes and self.text:
            out.append(self.text)
        if "parameters" in scopes:
            for index, (_, params) in enumerate(self.calls):
                if parameters_of is None or index in parameters_of:
                    out.extend(strings_in(params))
        return out

    def outward_texts(self) -> list[str]:
        """What leaves the assistant: the answer text and every string parameter."""
        return self.scoped(["text", "confirmation", "parameters"])
