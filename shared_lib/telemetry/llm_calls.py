"""The LLM call log (seed 001 §20.3): one entry per model call, masked.

``LLMCallLog`` is an ``LLM`` port adapter that decorates any other: it calls the inner
adapter, then writes ``orgs/{org}/llm_calls/{call_id}`` (peer, model, call type, masked
prompt and response, parameters, tokens, latency, status, error) and the ``llm_call``
log line the log-based metrics read. The turn and organisation come from the call
context the layer runner sets (``shared_lib.turn.callctx``); a call outside any turn is
filed under the default organisation. Writing the log never fails the call.

This is the one per-call record: every call goes through the port, so ``charter turns
show``, ``charter llm-calls`` and the dashboard read these entries and nothing else. The
turn's own total (``turn.usage``, which ``charter cost`` sums) adds up ``usage_of`` of the
same calls, so a turn's entries and its total agree.

>>> from shared_lib.adapters.memory_store import MemoryStore
>>> class Echo:
...     def complete(self, request):
...         return LLMResponse(content=[{"type": "text", "text": "ok"}], stop_reason="end_turn", model=request.model)
>>> llm = LLMCallLog(Echo(), MemoryStore())
>>> llm.complete(LLMRequest(model="m", messages=[{"role": "user", "content": "hi"}])).text()
'ok'
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from shared_lib.delivery import riders
from shared_lib.errors import LLMError
from shared_lib.ids import new_ulid, utc_now
from shared_lib.observability.logs import log_event
from shared_lib.ports import LLM, LLMRequest, LLMResponse, Store
from shared_lib.prices import PriceTable
from shared_lib.privacy.sanitizer import Sanitizer
from shared_lib.turn.callctx import current
from shared_lib.turn.envelope import Usage

MAX_TEXT = 20_000  # characters kept of any one prompt or response text (Firestore documents are ≤ 1 MiB)
Status = Literal["success", "error", "timeout"]


class LLMCallEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    call_id: str
    at: datetime
    org_id: str
    turn_id: str | None = None
    step: int | None = None
    layer: str = ""
    shadow: bool = False
    session_id: str | None = Field(default=None, description="The conversation key.")
    peer: str
    model: str
    call_type: str
    purpose: str = ""  # what the call was for (``ports.Purpose``): the peers' routing key
    prompt_messages: list[dict[str, Any]] = Field(
        default_factory=list, description="system + messages, masked"
    )
    tools: list[str] = Field(default_factory=list)
    parameters: dict[str, Any] = Field(default_factory=dict)
    response_text: str | None = None
    response_content: list[dict[str, Any]] = Field(default_factory=list)
    stop_reason: str | None = None
    prompt_tokens: int = 0
    response_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    total_tokens: int = 0
    latency_ms: float = 0.0
    attempts: int = 1
    interruptions: int = 0
    salvaged: bool = False
    cost_usd: float = 0.0
    status: Status = "success"
    error: str | None = None
    # the peers tried or skipped before the one that answered (``LLMResponse.fallbacks``): the
    # peer router adds them to the answer's entry (``annotate``)
    fallbacks: list[dict[str, str]] = Field(default_factory=list)


def usage_of(request: LLMRequest, response: LLMResponse, prices: PriceTable | None) -> Usage:
    """Tokens, duration and cost of one answered call (seed 000 §14); no price table, no cost."""
    u = response.usage
    cost = prices.cost(request.model, u) if prices is not None else 0.0
    return Usage(
        input_tokens=u.input_tokens,
        output_tokens=u.output_tokens,
        cache_creation_input_tokens=u.cache_creation_input_tokens,
        cache_read_input_tokens=u.cache_read_input_tokens,
        llm_calls=1,
        llm_duration_ms=round(response.duration_ms, 3),
        cost_usd=cost,
        cost_by_purpose={request.purpose or request.call_type: cost} if cost else {},
    )


def clip(value: Any, limit: int = MAX_TEXT) -> Any:
    """Long strings shortened (with a marker), recursively."""
    if isinstance(value, str):
        return value if len(value) <= limit else value[:limit] + f"…[{len(value) - limit} more]"
    if isinstance(value, dict):
        return {k: clip(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [clip(v, limit) for v in value]
    return value


class LLMCallLog:
    """Decorates an ``LLM`` adapter; every call leaves one masked entry in the store."""

    def __init__(
        self,
        inner: LLM,
        store: Store,
        *,
        peer: str | None = None,
        prices: PriceTable | None = None,
        sanitizer: Sanitizer | None = None,
        clock: Callable[[], datetime] = utc_now,
        default_org: str = "default",
        retention: Callable[[str], timedelta] | None = None,
    ) -> None:
        self.inner = inner
        self.store = store
        self.peer = peer or type(inner).__name__.removesuffix("LLM").lower() or "llm"
        self.prices = prices
        self.sanitizer = sanitizer or Sanitizer.default()
        self.clock = clock
        self.default_org = default_org
        self.retention = retention  # org -> how long its entries are kept (collection ``llm_calls``)

    def complete(self, request: LLMRequest) -> LLMResponse:
        t0 = time.perf_counter()
        try:
            response = self.inner.complete(request)
        except LLMError as exc:
            status: Status = "timeout" if exc.code == "api_timeout" else "error"
            self._write(request, None, (time.perf_counter() - t0) * 1000, status, f"{exc.code}: {exc.detail}")
            raise
        call_id = self._write(
            request, response, response.duration_ms or (time.perf_counter() - t0) * 1000, "success", None
        )
        return response.model_copy(update={"call_id": call_id}) if call_id else response

    def annotate(self, call_id: str, fields: dict[str, Any]) -> None:
        """Add ``fields`` to the entry ``call_id`` this log wrote (the org of the current call)."""
        ctx = current()
        org = ctx.org_id if ctx else self.default_org
        try:
            riders.write(self.store, f"orgs/{org}/llm_calls/{call_id}", fields, merge=True)
        except Exception as exc:  # evidence, not a gate (like the entry itself)
            log_event(
                "llm_call_log_failed", layer="llm", severity="ERROR", error=f"{type(exc).__name__}: {exc}"
            )

    def _entry(
        self,
        request: LLMRequest,
        response: LLMResponse | None,
        latency_ms: float,
        status: Status,
        error: str | None,
    ) -> LLMCallEntry:
        ctx = current()
        s = self.sanitizer
        shadow = bool(ctx and ctx.shadow)
        call_type = "shadow" if shadow and request.call_type == "proposal" else request.call_type
        usage = usage_of(request, response, self.prices) if response else Usage()
        prompt = [{"role": "system", "content": request.system}] if request.system else []
        prompt += request.messages
        return LLMCallEntry(
            call_id=new_ulid(),
            at=self.clock(),
            org_id=ctx.org_id if ctx else self.default_org,
            turn_id=ctx.turn_id if ctx else None,
            step=ctx.step if ctx else None,
            layer=ctx.layer if ctx else "",
            shadow=shadow,
            session_id=ctx.conversation_key if ctx else None,
            peer=self.peer,
            model=response.model if response else request.model,
            call_type=call_type,
            purpose=request.purpose or "",
            prompt_messages=clip(s.mask_obj(prompt)),
            tools=[str(t.get("name")) for t in request.tools],
            parameters={
                "max_tokens": request.max_tokens,
                "temperature": request.temperature,
                "tool_choice": request.tool_choice,
                "stream": request.stream,
            },
            response_text=clip(s.mask_text(response.text())) if response else None,
            response_content=clip(s.mask_obj(response.content)) if response else [],
            stop_reason=response.stop_reason if response else None,
            prompt_tokens=usage.input_tokens,
            response_tokens=usage.output_tokens,
            cache_creation_input_tokens=usage.cache_creation_input_tokens,
            cache_read_input_tokens=usage.cache_read_input_tokens,
            total_tokens=usage.input_tokens
            + usage.output_tokens
            + usage.cache_creation_input_tokens
            + usage.cache_read_input_tokens,
            latency_ms=round(latency_ms, 3),
            attempts=response.attempts if response else 1,
            interruptions=response.interruptions if response else 0,
            salvaged=response.salvaged if response else False,
            cost_usd=usage.cost_usd,
            status=status,
            error=clip(s.mask_text(error), 2000) if error else None,
        )

    def _write(
        self,
        request: LLMRequest,
        response: LLMResponse | None,
        latency_ms: float,
        status: Status,
        error: str | None,
    ) -> str | None:
        """Write the entry; its id (``None`` when the write failed: the call still answers)."""
        try:
            entry = self._entry(request, response, latency_ms, status, error)
            doc = entry.model_dump(mode="python")
            if self.retention is not None:
                doc["expires_at"] = entry.at + self.retention(entry.org_id)
            # with the stage's claim completion when a claimed stage calls (``delivery.riders``)
            riders.write(self.store, f"orgs/{entry.org_id}/llm_calls/{entry.call_id}", doc)
        except Exception as exc:  # the log is evidence, not a gate: the call's answer still goes back
            log_event(
                "llm_call_log_failed", layer="llm", severity="ERROR", error=f"{type(exc).__name__}: {exc}"
            )
            return None
        log_event(
            "llm_call",
            layer=entry.layer or "llm",
            duration_ms=entry.latency_ms,
            cost_usd=entry.cost_usd,
            model=entry.model,
            call_type=entry.call_type,
            status=entry.status,
            peer=entry.peer,
            input_tokens=entry.prompt_tokens,
            output_tokens=entry.response_tokens,
            cache_read_input_tokens=entry.cache_read_input_tokens,
            call_id=entry.call_id,
        )
        return entry.call_id
