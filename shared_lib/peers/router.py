"""``PeerRouter``: the runtime's ``LLM`` over several peers (seed 001 §6.2–6.4).

For ``request.purpose`` it walks the routed peers (``PeersConfig.route``) in order:

1. a local-only turn (``callctx.current().local_only``) considers only the local peers; with
   none, ``LocalOnlyViolation`` (an ``LLMError`` ``llm_unavailable``, ``local_only: …``) and no
   cloud peer is called;
   A local-only turn's local peers are marked unhealthy on failure even when only one is routed:
   the brain asks ``local_serving`` before it starts such a turn on the LLM arm;
2. a peer the ``HealthBoard`` says is unhealthy is skipped (``unhealthy: <reason>``), unless
   every routed peer is: then all are tried in order (a stale record must not take the product
   down);
3. a peer whose concurrency slot is not free within its ``queue_timeout`` is skipped (``busy``);
4. the peer is called; an ``LLMError`` (its retries spent) moves on to the next, and a
   ``llm_unavailable`` or ``rate_limit`` marks it unhealthy for every instance.

The answer carries ``peer`` and ``fallbacks`` (``[{"peer", "reason"}]``: the peers tried or
skipped before it); each fallback is a ``llm_peer_fallback`` log line, and ``annotate`` (the
composition root's: the answer's call log entry) records them with the answer. All peers
failing raises the last error.

``LocalOnlyViolation`` lives here, below the routing guard that reuses it
(``shared_lib.routing.guard``): one class, whichever of the two refuses.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from shared_lib.errors import LLMError
from shared_lib.observability.logs import log_event
from shared_lib.peers.config import PeersConfig, PeerSpec
from shared_lib.peers.health import HealthBoard
from shared_lib.ports import CALL_PURPOSE, LLM, LLMPeer, LLMRequest, LLMResponse, PeerHealth
from shared_lib.turn.callctx import current

# the failures that say the peer itself is in trouble (a timeout may be the turn's budget)
MARKS_UNHEALTHY = frozenset({"llm_unavailable", "rate_limit"})
MAX_REASON = 200


class LocalOnlyViolation(LLMError):
    """A cloud LLM request made for a local-only turn (refused before any cloud peer)."""


class PeerRouter:
    """See the module docstring.

    ``peers`` are the bare adapters (their attributes and ``health()``); ``callers`` what a
    call goes through for each (the call log, the local-only guard: ``composition``), default
    the peer itself.
    """

    def __init__(
        self,
        config: PeersConfig,
        peers: Mapping[str, LLMPeer],
        board: HealthBoard,
        *,
        callers: Mapping[str, LLM] | None = None,
        annotate: Callable[[LLMResponse], None] | None = None,
    ) -> None:
        missing = [p.name for p in config.peers if p.name not in peers]
        if missing:
            raise ValueError(f"no adapter for peer {', '.join(missing)}")
        self.config = config
        self.board = board
        self._peers = dict(peers)
        self._callers: dict[str, LLM] = {n: (callers or {}).get(n) or peer for n, peer in peers.items()}
        self._annotate = annotate
        self._slots = {
            p.name: threading.BoundedSemaphore(p.concurrency) for p in config.peers if p.concurrency
        }

    def peers(self) -> list[LLMPeer]:
        return [self._peers[p.name] for p in self.config.peers]

    def describe(self) -> list[dict[str, Any]]:
        """Every configured peer with its purposes and last health (``charter peers list``)."""
        return describe(self.config, self.board.records())

    def complete(self, request: LLMRequest) -> LLMResponse:
        purpose = request.purpose or CALL_PURPOSE[request.call_type]
        routed = self._candidates(request, purpose)
        # health only matters with a choice (a lone peer is always tried, never probed or marked),
        # or for a local-only turn: whether a local peer is healthy decides its arm (``local_serving``)
        ctx = current()
        choice = len(routed) > 1 or bool(ctx and ctx.local_only)
        records = {p.name: self.board.status(p.name) for p in routed} if choice else {}
        any_healthy = any(_ok(records.get(p.name)) for p in routed)
        fallbacks: list[dict[str, str]] = []
        last: LLMError | None = None
        for spec in routed:
            record = records.get(spec.name)
            if any_healthy and not _ok(record):
                self._fell_back(fallbacks, spec, request, f"unhealthy: {record.reason if record else ''}")
                continue
            slot = self._slot(spec)
            if slot is None:
                self._fell_back(fallbacks, spec, request, "busy")
                continue
            with slot:
                try:
                    response = self._callers[spec.name].complete(request)
                except LLMError as exc:
                    if choice and exc.code in MARKS_UNHEALTHY:
                        self.board.mark_unhealthy(spec.name, _reason(exc))
                    self._fell_back(fallbacks, spec, request, _reason(exc))
                    last = exc
                    continue
            answered = response.model_copy(update={"peer": spec.name, "fallbacks": fallbacks})
            if fallbacks and self._annotate is not None:
                self._annotate(answered)
            return answered
        if last is not None:
            raise last
        tried = "; ".join(f"{f['peer']}: {f['reason']}" for f in fallbacks)
        raise LLMError("llm_unavailable", f"no peer could take the {purpose} call ({tried})")

    def local_serving(self, purpose: str) -> tuple[str | None, str]:
        """The local peer a local-only turn's ``purpose`` would be served by, first healthy one in
        routing order, as ``(name, "")``; ``(None, why)`` when there is none: ``no_local_peer`` (no
        local peer is routed for it) or ``local_peer_unhealthy`` (every one is down)."""
        local = [p for p in self.config.route(purpose) if p.local]
        if not local:
            return None, "no_local_peer"
        healthy = [p for p in local if _ok(self.board.status(p.name))]
        return (healthy[0].name, "") if healthy else (None, "local_peer_unhealthy")

    def _candidates(self, request: LLMRequest, purpose: str) -> list[PeerSpec]:
        routed = self.config.route(purpose)
        ctx = current()
        if ctx is None or not ctx.local_only:
            return routed
        local = [p for p in routed if p.local]
        if not local:
            raise LocalOnlyViolation(
                "llm_unavailable",
                f"local_only: no local peer serves {purpose} ({request.call_type} in {ctx.layer or '-'}, "
                f"turn {ctx.turn_id})",
            )
        return local

    def _slot(self, spec: PeerSpec) -> AbstractContextManager[Any] | None:
        """The peer's concurrency slot, held for the call; ``None`` when none freed in time."""
        semaphore = self._slots.get(spec.name)
        if semaphore is None:
            return nullcontext()
        if not semaphore.acquire(timeout=spec.queue_timeout):
            return None
        return _Release(semaphore)

    @staticmethod
    def _fell_back(fallbacks: list[dict[str, str]], spec: PeerSpec, request: LLMRequest, reason: str) -> None:
        fallbacks.append({"peer": spec.name, "reason": reason})
        log_event(
            "llm_peer_fallback",
            layer="llm",
            severity="WARNING",
            peer=spec.name,
            reason=reason,
            purpose=request.purpose,
            call_type=request.call_type,
        )


class _Release:
    """Releases an acquired semaphore at the end of a ``with``."""

    def __init__(self, semaphore: threading.BoundedSemaphore) -> None:
        self.semaphore = semaphore

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        self.semaphore.release()


def local_serving(llm: object, purpose: str) -> tuple[str | None, str]:
    """``PeerRouter.local_serving`` of the runtime's ``llm``; any other LLM (one cloud model behind
    the local-only guard) or none has no local peer."""
    if not isinstance(llm, PeerRouter):
        return None, "no_local_peer"
    return llm.local_serving(purpose)


def describe(config: PeersConfig, records: Mapping[str, PeerHealth]) -> list[dict[str, Any]]:
    """Each configured peer, in priority order: kind, purposes, local, limits and last health."""
    rows = []
    for spec in config.peers:
        record = records.get(spec.name)
        rows.append(
            {
                "name": spec.name,
                "kind": spec.kind,
                "local": spec.local,
                "purposes": config.purposes_of(spec.name),
                "concurrency": spec.concurrency,
                "max_context_tokens": spec.max_context_tokens,
                "health": None if record is None else record.model_dump(mode="json"),
            }
        )
    return rows


def _ok(record: PeerHealth | None) -> bool:
    return record is None or record.healthy


def _reason(exc: LLMError) -> str:
    text = f"{exc.code}: {exc.detail}" if exc.detail else exc.code
    return text[:MAX_REASON]
