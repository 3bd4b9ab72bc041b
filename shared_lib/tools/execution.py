"""Executing one tool call exactly once (DESIGN §1.2, seed 000 §6.6).

The receipt ``orgs/{org}/receipts/{turn}-{step}-{index}`` names the effect of one call.

* **read** tools have no effect: they run, nothing is claimed.
* **store** effects (and task effects on the store backend): the handler writes through
  the transaction that also creates the receipt ``done`` with the result, so the effect
  and its receipt commit together or not at all; a redelivery finds the receipt and
  returns the stored result. The handler has its tool's timeout; a receipt the store holds
  locked (a killed process's transaction) is waited for within the turn's budget, then
  ``LayerRetry`` (``shared_lib.tools.call_wait``), never a ``tool_timeout``.
* **external** effects (the ChatWork task API has no idempotency key): the receipt is
  claimed ``in_progress`` (with a lease) *before* the call, the call is made, then the
  receipt becomes ``done`` with the result. A redelivery that finds ``in_progress`` with
  an expired lease (or ``failed``) runs the handler in *recovery*: it first looks for the
  effect at the provider (the marker in the task body) and creates only if absent. A live
  lease means another delivery is working: ``LayerRetry`` (Pub/Sub tries again later).
* **dry runs** (shadow mode) validate and preview: the task backend refuses changes,
  there is no transaction, and no receipt is written.

At rest (``shared_lib.tools.at_rest``): the handler's writes and the receipt's ``request``
and ``result`` are stored masked; the caller gets the handler's own result on the first
run and the stored (masked) one on a replay. A receipt names its ``user_id`` so a person's
receipts can be purged.

Handlers always read through an organisation-scoped, read-only view of the store; the
transaction is their only way to write (so a write cannot escape its receipt).

Every handler runs under its tool's timeout; a failure becomes a typed error code of the
seed §6.7.3 catalogue, never an exception string shown to a user. A store outage is
re-raised so the layer is redelivered (receipts make that safe).
"""

from __future__ import annotations

import contextvars
import dataclasses
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FuturesTimeout
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, TypeVar

from cryptography.fernet import MultiFernet
from pydantic import BaseModel, ValidationError

from shared_lib import collections
from shared_lib.adapters.scoped import CrossOrgAccess, WriteRefused, scoped
from shared_lib.delivery.idempotency import Claims, ClaimState
from shared_lib.errors import LayerRetry, StoreUnavailable
from shared_lib.observability.logs import log_event
from shared_lib.ports import Embedder, Store, Transaction
from shared_lib.privacy.org_vault import OrgVault
from shared_lib.privacy.sanitizer import Sanitizer
from shared_lib.tools.at_rest import AtRestTransaction
from shared_lib.tools.call_wait import HandlerClock, HandlerTimeout, run_on_store, store_patience
from shared_lib.tools.registry import ToolContext, ToolInputError, ToolRegistry, ToolSpec
from shared_lib.tools.task_backend import (
    DryRunTaskBackend,
    TaskBackend,
    TaskBackendError,
    TaskOperationUnsupported,
)

T = TypeVar("T")
RECEIPT_TTL = timedelta(days=30)


class ToolTimeout(Exception):
    """The handler did not finish within its tool's ``timeout_seconds``."""


@dataclass(frozen=True)
class CallRequest:
    tool_name: str
    parameters: dict[str, Any]
    org_id: str
    user_id: str
    room_id: str
    conversation_key: str
    call_id: str  # ``{turn_id}-{step}-{index}``
    dry_run: bool = False
    confirmed: frozenset[str] = frozenset()  # reason codes the user approved for this action
    channel: str = ""  # where the conversation is (a goal keeps it: the heartbeat's check-ins)
    job_id: str = ""  # the delegated job this call runs for ("" for a person's own turn)


@dataclass(frozen=True)
class CallOutcome:
    ok: bool
    result: dict[str, Any] = field(default_factory=dict)
    error_code: str | None = None
    message: str = ""  # internal detail (for the error record), never shown to a user
    details: dict[str, Any] = field(default_factory=dict)
    receipt_id: str | None = None
    replayed: bool = False

    @classmethod
    def failed(
        cls, code: str, message: str, result: dict[str, Any] | None = None, **details: Any
    ) -> CallOutcome:
        return cls(ok=False, result=result or {}, error_code=code, message=message, details=details)


def _stored(data: dict[str, Any]) -> dict[str, Any]:
    """A request or result as a receipt keeps it (masked)."""
    masked: dict[str, Any] = Sanitizer.default().mask_stored(data)
    return masked


def _after_commit(ctx: ToolContext, store: Store, retention: timedelta | None, tool: str) -> None:
    """The handler's post-commit work (``ToolContext.after_commit``); a failure is logged, never
    the call's: the effect is committed (the memory index is repaired by ``charter memory reindex``)."""
    for work in ctx.after_commit:
        try:
            work(store, retention)
        except Exception as exc:
            log_event(
                "after_commit_failed", severity="WARNING", tool=tool, error=f"{type(exc).__name__}: {exc}"
            )


def receipt_path(org_id: str, call_id: str) -> str:
    return collections.path("receipts", org=org_id, id=call_id)


def run_with_timeout(fn: Callable[[], T], timeout: float, on_abandon: Callable[[], None] | None = None) -> T:
    """``fn()`` on a worker thread; ``ToolTimeout`` if it is not done in ``timeout`` seconds."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tool")
    future = pool.submit(contextvars.copy_context().run, fn)  # the turn's call context goes along
    pool.shutdown(wait=False)
    try:
        return future.result(timeout=timeout)
    except FuturesTimeout:
        if on_abandon is not None:
            on_abandon()
        raise ToolTimeout(f"no answer within {timeout}s") from None


def _pydantic_detail(exc: ValidationError) -> list[str]:
    return [f"{'.'.join(str(x) for x in e['loc']) or '-'}: {e['msg']}" for e in exc.errors()[:5]]


class ToolExecutor:
    """Runs calls against a registry, a store and a task backend, each effect exactly once."""

    def __init__(
        self,
        store: Store,
        registry: ToolRegistry,
        *,
        tasks: TaskBackend,
        clock: Callable[[], datetime],
        retention: Callable[[str], timedelta] | None = None,
        embedder: Embedder | None = None,
        vault: OrgVault | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.vault = vault  # the vault: what a person gave to keep is sealed with their organisation's key
        self.registry = registry
        self.tasks = tasks
        self.clock = clock
        self.retention = retention  # org -> how long its personal data is kept

    def cipher(self, org_id: str) -> MultiFernet | None:
        """The vault cipher of ``org_id``: a call seals and opens with its organisation's key."""
        return self.vault.for_org(org_id) if self.vault is not None else None

    def execute(self, req: CallRequest) -> CallOutcome:
        spec = self.registry.get(req.tool_name)
        if spec is None or not spec.enabled:
            return CallOutcome.failed("handler_not_found", f"no enabled tool {req.tool_name!r}")
        try:
            params = spec.params.model_validate(self.registry.canonical_parameters(spec.name, req.parameters))
        except ValidationError as exc:
            fields = _pydantic_detail(exc)
            return CallOutcome.failed(
                "validation_error",
                "; ".join(fields),
                {"detail": "パラメータが正しくありません", "fields": fields},
            )
        try:
            return self._run(spec, params, req)
        except ToolInputError as exc:
            return CallOutcome.failed(
                "validation_error",
                str(exc),
                exc.as_result(),
                field=exc.field,
                options=exc.options,
            )
        except (StoreUnavailable, LayerRetry):
            raise
        except CrossOrgAccess as exc:
            return CallOutcome.failed(
                "access_control_error", str(exc), {"detail": "アクセスできないデータです"}
            )
        except TaskOperationUnsupported as exc:
            return CallOutcome.failed("handler_not_found", str(exc), {"detail": str(exc)})
        except TaskBackendError as exc:
            return CallOutcome.failed(
                "external_api_error",
                str(exc),
                {"detail": "外部サービスの呼び出しに失敗しました"},
                status=exc.status,
            )
        except ToolTimeout as exc:
            return CallOutcome.failed("tool_timeout", f"{spec.name}: {exc}", {"detail": "時間切れです"})
        except WriteRefused as exc:
            return CallOutcome.failed(
                "execution_error",
                f"{spec.name} wrote outside its transaction: {exc}",
                {"detail": "実行エラー"},
            )
        except Exception as exc:
            return CallOutcome.failed(
                "execution_error", f"{type(exc).__name__}: {exc}", {"detail": "実行エラー"}
            )

    # -- the three paths ------------------------------------------------------------------
    def _context(self, req: CallRequest, store: Store, now: datetime) -> ToolContext:
        tasks = self.tasks.with_store(store)
        return ToolContext(
            store=store,
            org_id=req.org_id,
            user_id=req.user_id,
            room_id=req.room_id,
            turn_id=req.call_id,
            now=now,
            dry_run=req.dry_run,
            conversation_key=req.conversation_key,
            tasks=DryRunTaskBackend(tasks) if req.dry_run else tasks,
            confirmed=req.confirmed,
            channel=req.channel,
            embedder=self.embedder,
            job_id=req.job_id,
            cipher=self.cipher(req.org_id),
        )

    def _run(self, spec: ToolSpec, params: BaseModel, req: CallRequest) -> CallOutcome:
        # Handlers read through a read-only view: their only way to write is the transaction
        # the executor gives them, which also carries the receipt.
        view = scoped(self.store, req.org_id, read_only=True)
        ctx = self._context(req, view, self.clock())
        if req.dry_run or spec.effect_kind == "read":
            data = run_with_timeout(lambda: spec.handler(params, ctx, None), spec.timeout_seconds)
            return CallOutcome(ok=True, result=data)
        writable = scoped(self.store, req.org_id)
        if spec.effect_kind == "tasks" and ctx.task_backend.external:
            return self._external(spec, params, req, ctx, writable)
        return self._transactional(spec, params, req, ctx, writable)

    def _receipts(self, store: Store) -> Claims:
        return Claims(store, ttl=RECEIPT_TTL, completed="done")

    def _transactional(
        self, spec: ToolSpec, params: BaseModel, req: CallRequest, ctx: ToolContext, writable: Store
    ) -> CallOutcome:
        path = receipt_path(req.org_id, req.call_id)
        abandoned = threading.Event()
        retention = self.retention(req.org_id) if self.retention else None
        fresh: dict[str, Any] = {}

        handler = HandlerClock()

        def effect(txn: Transaction) -> dict[str, Any]:
            if abandoned.is_set():  # the caller gave up while the store held the call: run nothing
                raise ToolTimeout("abandoned")
            at_rest = AtRestTransaction(txn, now=ctx.now, retention=retention, cipher=self.cipher(req.org_id))
            data = handler.run(lambda: spec.handler(params, ctx, at_rest))
            if abandoned.is_set():  # the caller gave up: commit nothing
                raise ToolTimeout("abandoned")
            fresh["result"] = data
            return _stored(data)

        receipts = self._receipts(writable)
        fields = {"tool": spec.name, "at": ctx.now, "user_id": req.user_id}
        try:
            stored, replayed = run_on_store(
                lambda: receipts.run_once(path, effect, now=ctx.now, fields=fields),
                handler,
                timeout=spec.timeout_seconds,
                patience=store_patience(spec.timeout_seconds),
                on_abandon=abandoned.set,
            )
        except HandlerTimeout as exc:  # the handler itself ran past its tool's timeout
            raise ToolTimeout(str(exc)) from None
        data = stored if replayed else fresh["result"]
        if not replayed:
            _after_commit(ctx, writable, retention, spec.name)
        return CallOutcome(ok=True, result=data, receipt_id=req.call_id, replayed=replayed)

    def _lease(self, spec: ToolSpec) -> timedelta:
        return timedelta(seconds=spec.timeout_seconds * 2 + 5)

    def _external(
        self, spec: ToolSpec, params: BaseModel, req: CallRequest, ctx: ToolContext, writable: Store
    ) -> CallOutcome:
        path = receipt_path(req.org_id, req.call_id)
        request = _stored(params.model_dump(mode="json"))
        receipts = self._receipts(writable)
        claim = receipts.claim(
            path,
            now=ctx.now,
            lease=self._lease(spec),
            fields={"tool": spec.name, "at": ctx.now, "request": request, "user_id": req.user_id},
        )
        if claim.state is ClaimState.COMPLETED:
            return CallOutcome(ok=True, result=claim.result, receipt_id=req.call_id, replayed=True)
        if claim.state is ClaimState.BUSY:
            raise LayerRetry(f"{spec.name}: call {req.call_id} is in progress elsewhere")
        # A claim taken over from an earlier attempt (expired lease, failed) may have had its
        # effect already: the handler looks for it at the provider before creating.
        run_ctx = dataclasses.replace(ctx, recovering=claim.took_over)

        def call_and_record() -> dict[str, Any]:
            data = spec.handler(params, run_ctx, None)
            now = self.clock()
            receipts.complete(
                path,
                now=now,
                result=_stored(data),
                fields={"tool": spec.name, "at": now, "request": request, "user_id": req.user_id},
            )
            return data

        try:
            data = run_with_timeout(call_and_record, spec.timeout_seconds)
        except Exception as exc:
            self._mark_failed(receipts, path, exc)
            raise
        return CallOutcome(ok=True, result=data, receipt_id=req.call_id, replayed=False)

    @staticmethod
    def _mark_failed(receipts: Claims, path: str, exc: Exception) -> None:
        try:
            receipts.fail(path, error=type(exc).__name__)
        except Exception:  # the receipt stays in_progress; its lease expiry leads to recovery too
            return
