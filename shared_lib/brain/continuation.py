"""``max_tokens`` continuation (seed 000 §6.7.6): up to ``max_continuations`` further calls.

* Text cut by ``max_tokens`` is continued: the text so far is sent back as an assistant
  prefill and the model writes the rest; the pieces are joined.
* A ``tool_use`` cut by ``max_tokens`` cannot be continued (its JSON is incomplete), and a
  forced tool call cannot take a prefill: the call is repeated with twice the
  ``max_tokens`` (up to ``cap``).

Every call is handed to ``record`` as soon as it returns (token accounting per call),
so calls made before a failure are never lost. Works with any ``LLM`` port.

No call starts once the turn's budget is spent (``callctx.remaining``): ``LLMError``
``api_timeout``, which every caller answers with the persona's degraded text. (The
Anthropic adapter also bounds each call and its retries by what is left.)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from shared_lib.errors import LLMError
from shared_lib.ports import LLM, LLMRequest, LLMResponse
from shared_lib.turn.callctx import remaining

Recorder = Callable[[LLMRequest, LLMResponse], object]


@dataclass
class Completion:
    response: LLMResponse  # the whole answer (continued text joined)
    continuations: int = 0

    @property
    def truncated(self) -> bool:
        """Still cut by ``max_tokens`` after the allowed continuations."""
        return self.response.stop_reason == "max_tokens"


def within_budget(llm: LLM, request: LLMRequest) -> LLMResponse:
    """``llm.complete(request)`` unless the turn's budget is spent (then ``api_timeout``)."""
    left = remaining()
    if left is not None and left <= 0:
        raise LLMError("api_timeout", f"turn budget spent ({request.call_type} call not made)")
    return llm.complete(request)


def complete(
    llm: LLM, request: LLMRequest, *, max_continuations: int, cap: int, record: Recorder
) -> Completion:
    response = within_budget(llm, request)
    record(request, response)
    done = Completion(response)
    current = request
    while done.response.stop_reason == "max_tokens" and done.continuations < max_continuations:
        done.continuations += 1
        forced = bool(request.tool_choice and request.tool_choice.get("type") in ("tool", "any"))
        if forced or done.response.tool_uses() or not done.response.text().strip():
            current = current.model_copy(
                update={"call_type": "continuation", "max_tokens": min(cap, current.max_tokens * 2)}
            )
            response = within_budget(llm, current)
            record(current, response)
            done.response = response
            continue
        prefill = done.response.text().rstrip()  # the API rejects a prefill ending in whitespace
        follow = request.model_copy(
            update={
                "call_type": "continuation",
                "messages": [*request.messages, {"role": "assistant", "content": prefill}],
            }
        )
        response = within_budget(llm, follow)
        record(follow, response)
        rest = [b for b in response.content if b.get("type") != "text"]
        done.response = response.model_copy(
            update={"content": [{"type": "text", "text": prefill + response.text()}, *rest]}
        )
    return done
