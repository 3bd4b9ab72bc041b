"""Validation of the LLM's answer into a ``Proposal`` (seed 000 §5.2.3b).

An answer is valid when it has the shape of one of the three output types, every
proposed tool is an enabled registry tool, each tool's parameters pass that tool's
own parameter model, and its ``loop`` hand-over is strictly typed (``shared_lib.loop.hand_over``:
``needs_next_loop`` a JSON boolean, never 「yes」 or ``1``). Anything else raises ``InvalidProposal`` whose message is guidance
for the one retry (field names and rules, never the values).

>>> from shared_lib.tools.builtin import builtin_registry
>>> validate_proposal({"output_type": "tool_call", "reasoning": {"intent_understanding": "x",
...     "tool_selection_reason": "y"}, "confidence": {"overall": 0.9},
...     "tool_calls": [{"tool_name": "rm_rf", "parameters": {}}]}, builtin_registry())  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
shared_lib.brain.validation.InvalidProposal: tool_calls[0].tool_name: 'rm_rf' is not a defined tool ...
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from shared_lib.errors import LLMOutputError
from shared_lib.loop.hand_over import hand_over_problem
from shared_lib.tools.registry import ToolRegistry
from shared_lib.turn.proposal import Proposal, ToolCallProposal


class InvalidProposal(LLMOutputError):
    """The answer is not a valid proposal; ``str(exc)`` is the guidance for the retry."""

    def __init__(self, guidance: str, *, code: str = "parse_error") -> None:
        # code: parse_error (shape) or invalid_tool_call (tool / parameters)
        super().__init__(code, guidance[:800])

    def __str__(self) -> str:
        return self.detail


def summarise(exc: ValidationError, prefix: str = "") -> str:
    parts = []
    for err in exc.errors()[:5]:
        loc = ".".join(str(x) for x in err["loc"]) or "(root)"
        parts.append(f"{prefix}{loc}: {err['msg']}")
    return "; ".join(parts)


def validate_proposal(raw: Any, registry: ToolRegistry) -> Proposal:
    if not isinstance(raw, dict):
        raise InvalidProposal(f"the answer must be a JSON object, got {type(raw).__name__}")
    try:
        proposal = Proposal.model_validate(_canonical(raw, registry))
    except ValidationError as exc:
        raise InvalidProposal(summarise(exc)) from exc
    if problem := hand_over_problem(proposal.root.loop):
        raise InvalidProposal(problem)
    if isinstance(proposal.root, ToolCallProposal):
        names = sorted(s.name for s in registry.enabled())
        for i, call in enumerate(proposal.root.tool_calls):
            spec = registry.get(call.tool_name)
            if spec is None or not spec.enabled:
                raise InvalidProposal(
                    f"tool_calls[{i}].tool_name: {call.tool_name!r} is not a defined tool "
                    f"(defined: {', '.join(names)})",
                    code="invalid_tool_call",
                )
            try:
                spec.params.model_validate(call.parameters)
            except ValidationError as exc:
                raise InvalidProposal(
                    summarise(exc, f"tool_calls[{i}].parameters."), code="invalid_tool_call"
                ) from exc
    return proposal


def _canonical(raw: dict[str, Any], registry: ToolRegistry) -> dict[str, Any]:
    """Enumerated values written as their labels (「人物」) read as the values (``person``)."""
    calls = raw.get("tool_calls")
    if not isinstance(calls, list):
        return raw
    fixed = [
        {**c, "parameters": registry.canonical_parameters(str(c.get("tool_name", "")), c["parameters"])}
        if isinstance(c, dict) and isinstance(c.get("parameters"), dict)
        else c
        for c in calls
    ]
    return {**raw, "tool_calls": fixed}
