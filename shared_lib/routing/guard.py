"""The local-only guard of the LLM port (seed 003 セキュリティ: ``/local`` 中はクラウド呼び出しを禁止).

``LocalOnlyGuard`` decorates any ``LLM`` adapter: a request made while the current turn is
local-only (``callctx.current().local_only``, bound by the layer runner from
``turn.route.local_only``) raises ``LocalOnlyViolation`` and never reaches the adapter.
``composition.build_runtime`` puts it around the runtime's LLM, injected or built, so every
outbound request of every layer (the brain, the responder's phrasing, self-critique, the
shadow candidate) is checked, whatever the layer itself decided. With several peers
(``shared_lib.peers``) the composition root puts the guard around each cloud peer, never around
a local one, and the peer router itself considers only the local peers of a local-only turn.

``LocalOnlyViolation`` is the peer router's (``shared_lib.peers.router``, a floor below), reused
here so a caller catches one class whichever refused. It is an ``LLMError`` (code
``llm_unavailable``): a caller that degrades on a failed call degrades the same way, and the
user reads the persona's message, never this one.

>>> from shared_lib.ports import LLMRequest, LLMResponse
>>> class Echo:
...     def complete(self, request):
...         return LLMResponse(content=[], stop_reason="end_turn", model=request.model)
>>> LocalOnlyGuard(Echo()).complete(LLMRequest(model="m", messages=[])).model
'm'
"""

from __future__ import annotations

from shared_lib.peers.router import LocalOnlyViolation
from shared_lib.ports import LLM, LLMRequest, LLMResponse
from shared_lib.turn.callctx import current

__all__ = ["LocalOnlyGuard", "LocalOnlyViolation"]


class LocalOnlyGuard:
    """Decorates an ``LLM`` adapter; refuses every request of a local-only turn."""

    def __init__(self, inner: LLM) -> None:
        self.inner = inner

    def complete(self, request: LLMRequest) -> LLMResponse:
        ctx = current()
        if ctx is not None and ctx.local_only:
            raise LocalOnlyViolation(
                "llm_unavailable",
                f"local_only: cloud LLM request refused ({request.call_type} in {ctx.layer or '-'}, "
                f"turn {ctx.turn_id})",
            )
        return self.inner.complete(request)
