"""A case's fixtures: a fixed proposal and a policy patch (``dataset.Case.proposal``/``policy``).

Some branches of the guardian tree (the confidence bands, the constitution's own checks, a
proposer's request for confirmation) depend on what the brain proposed, not on what the user
said, and others (a company teaching, a tool's danger class) on a policy the shipped one does
not have. Such a case fixes what it needs:

* ``FixedProposalLLM`` — the ``LLM`` port answering the proposal call with the case's proposal
  as a ``submit_proposal`` tool use, exactly as the model would submit it. The brain's LLM arm
  still inspects, validates and bands it (constitution, parameter models, the confidence
  table); the guardian, the gate, the executor and the responder decide and act as in any
  turn. Any other call (the phrasing of results) gets an empty answer, so the responder uses
  the persona's fixed templates. A case with a proposal is run this way for every brain under
  test (the legacy brain included), so its result measures the deciding layers only.
* ``patched_policy`` — the product's policy (``load_policy_config``: ``CHARTER_POLICY`` or the
  packaged file) with a patch merged in, parsed by ``parse_policy_config`` like any policy file:
  objects merge key by key, anything else (a list, a number) replaces the value.

>>> llm = FixedProposalLLM({"output_type": "text_response"})
>>> from shared_lib.ports import LLMRequest
>>> llm.complete(LLMRequest(model="m", messages=[])).tool_uses()[0]["input"]
{'output_type': 'text_response'}
>>> patched_policy({"confidence": {"medium": 0.8}}).confidence.medium
0.8
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from shared_lib.brain.tool_defs import DECISION_TOOL
from shared_lib.policy.config import PolicyConfig, load_policy_config, parse_policy_config
from shared_lib.ports import LLMRequest, LLMResponse


class FixedProposalLLM:
    """The proposal call answers ``proposal``; every other call an empty text (templates phrase)."""

    def __init__(self, proposal: Mapping[str, Any]) -> None:
        self.proposal = dict(proposal)
        self.calls = 0

    def complete(self, request: LLMRequest) -> LLMResponse:
        self.calls += 1
        if request.call_type != "proposal":
            return LLMResponse(
                content=[{"type": "text", "text": ""}], stop_reason="end_turn", model=request.model
            )
        use = {
            "type": "tool_use",
            "id": f"toolu_fixed_{self.calls}",
            "name": DECISION_TOOL,
            "input": copy.deepcopy(self.proposal),
        }
        return LLMResponse(content=[use], stop_reason="tool_use", model=request.model)


def merged(base: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``patch`` merged in: objects key by key, anything else replaced."""
    out = dict(base)
    for key, value in patch.items():
        old = out.get(key)
        out[key] = merged(old, value) if isinstance(old, Mapping) and isinstance(value, Mapping) else value
    return out


def patched_policy(patch: Mapping[str, Any], *, source: str = "case policy") -> PolicyConfig:
    """The product's policy with ``patch`` applied; ``ConfigError`` when the result does not parse."""
    base = load_policy_config().model_dump(mode="json")
    return parse_policy_config(merged(base, patch), source=source)
