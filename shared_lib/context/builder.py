"""The Context Builder (seed 000 §6.1): every source fetched concurrently, each with a
timeout; a source that fails or times out degrades the context instead of failing the
turn (seed §6.7.3 ``memory_access_error``, fallback ``proceed_without_memory``); Truth
order and the token budget decide what the model sees. A source the execution path needs
(``required``: the layer names them) that is slower than the sources' deadline is waited for
while the turn's processing budget lasts (``callctx.remaining``): a slow store is not a store
that is down, and a busy machine must not turn a request into the degraded answer.

>>> from shared_lib.adapters.memory_store import MemoryStore
>>> from shared_lib.tools.task_backend import StoreTaskBackend
>>> from datetime import datetime, UTC
>>> store = MemoryStore()
>>> built = ContextBuilder().build(ContextInput(store=store, tasks=StoreTaskBackend(store), org_id="acme",
...     user_id="u1", room_id="r1", conversation_key="acme/r1/u1", text="こんにちは",
...     now=datetime(2026, 1, 28, tzinfo=UTC)))
>>> built.degraded, built.records["knowledge"].status
([], 'skipped')
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Collection, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, wait
from concurrent.futures import TimeoutError as FuturesTimeout
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from shared_lib.adapters.prefetched import PrefetchedStore
from shared_lib.adapters.scoped import scoped
from shared_lib.context.budget import DEFAULT_DROP_ORDER, DROPPABLE, Fitted, fit
from shared_lib.context.render import agent_state_sections, build_sections
from shared_lib.context.sources import (
    OnceEmbedder,
    OrgLists,
    SourceRequest,
    SourceSpec,
    default_sources,
    known_documents,
)
from shared_lib.errors import ConfigError
from shared_lib.ports import Embedder, Store
from shared_lib.settings import Settings
from shared_lib.tools.task_backend import TaskBackend
from shared_lib.turn.callctx import remaining as budget_left

SourceStatus = Literal["ok", "failed", "timeout", "skipped"]
# the sources that answer ``None`` when they were not asked (knowledge on demand only; neither
# for a turn no model answers): recorded ``skipped``, not an empty read
RECALLED = frozenset({"knowledge", "episodes"})
KNOWLEDGE_TRIGGERS = (
    "?",
    "？",
    "教えて",
    "とは",
    "方法",
    "手順",
    "ルール",
    "規程",
    "規定",
    "マニュアル",
    "について",
    "どうすれば",
    "どうやって",
    "知りたい",
)


@dataclass(frozen=True)
class ContextConfig:
    token_budget: int = 2000
    drop_order: tuple[str, ...] = DEFAULT_DROP_ORDER
    source_timeout_seconds: float = 2.0
    recent_messages: int = 10
    knowledge_limit: int = 5
    knowledge_triggers: tuple[str, ...] = KNOWLEDGE_TRIGGERS
    episodes_limit: int = 3
    sources_off: tuple[str, ...] = ()  # not read at all (``CHARTER_CONTEXT_SOURCES_OFF``, local only)
    lists_ttl_seconds: float = 10.0  # the directory and teachings lists kept per process (``OrgLists``)

    def __post_init__(self) -> None:
        unknown = set(self.drop_order) - DROPPABLE
        if unknown:
            raise ConfigError(f"context drop order names unknown sections: {sorted(unknown)}")
        names = {s.name for s in default_sources()}
        if set(self.sources_off) - names:
            raise ConfigError(
                f"CHARTER_CONTEXT_SOURCES_OFF names unknown sources: {sorted(set(self.sources_off) - names)}"
                f" (sources: {', '.join(sorted(names))})"
            )
        if self.token_budget < 100 or self.source_timeout_seconds <= 0:
            raise ConfigError("context token budget must be >= 100 and the source timeout positive")

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ContextConfig:
        """The configuration of the ``CHARTER_CONTEXT_*`` variables in ``env``."""
        return cls.from_settings(Settings.from_env(env))

    @classmethod
    def from_settings(cls, settings: Settings) -> ContextConfig:
        kw: dict[str, Any] = {
            "token_budget": settings.context_token_budget,
            "source_timeout_seconds": settings.context_source_timeout,
            "lists_ttl_seconds": settings.flags_ttl_seconds,  # refreshed as often as the configuration
        }
        if settings.context_drop_order:
            kw["drop_order"] = tuple(x.strip() for x in settings.context_drop_order.split(",") if x.strip())
        if settings.context_sources_off:
            kw["sources_off"] = tuple(x.strip() for x in settings.context_sources_off.split(",") if x.strip())
        return cls(**kw)


@dataclass(frozen=True)
class ContextInput:
    store: Store
    tasks: TaskBackend
    org_id: str
    user_id: str
    room_id: str
    conversation_key: str
    text: str
    now: datetime
    user_name: str | None = None
    embedder: Embedder | None = None  # the knowledge and episodes sources' hybrid search; None: keyword only
    # the fast path answers the turn; the text reads as an answer to a confirmation (then nothing
    # is recalled: ``sources.answered_without_recall``)
    greeting: bool = False
    reads_as_answer: bool = False


@dataclass(frozen=True)
class SourceRecord:
    name: str
    status: SourceStatus
    truth: int
    priority: int
    items: int = 0
    duration_ms: float = 0.0
    error: str = ""


@dataclass
class BuiltContext:
    values: dict[str, Any]
    records: dict[str, SourceRecord]
    fitted: Fitted
    degraded: list[str] = field(default_factory=list)

    @property
    def rendered(self) -> str:
        return self.fitted.rendered

    def failures(self) -> list[SourceRecord]:
        return [r for r in self.records.values() if r.status in ("failed", "timeout")]


def _failed(spec: SourceSpec, exc: Exception) -> SourceRecord:
    return SourceRecord(
        spec.name, "failed", spec.truth, spec.priority, error=f"{type(exc).__name__}: {exc}"[:300]
    )


def _finishes_within_budget(future: Future[tuple[Any, float]]) -> bool:
    """Whether a source past the sources' deadline answers before the turn's processing budget
    ends (``False`` without a budget: the deadline stands)."""
    left = budget_left()
    if left is None or left <= 0:
        return False
    wait([future], timeout=left)
    return future.done()


def _count(value: Any) -> int:
    if value is None or value == "":
        return 0
    return len(value) if isinstance(value, list | dict) else 1


# Source threads per process (``ContextBuilder._threads``): 14 sources a turn, so about nine
# turns building at once before a source waits for a thread; idle threads cost a stack each.
SOURCE_THREADS = 128


class ContextBuilder:
    def __init__(self, config: ContextConfig | None = None, sources: list[SourceSpec] | None = None) -> None:
        self.config = config or ContextConfig()
        self.sources = sources
        self.lists = OrgLists(ttl=self.config.lists_ttl_seconds)
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    def _threads(self) -> ThreadPoolExecutor:
        """The process's source threads, made on the first build (after any fork) and reused:
        a build used to start a pool of its own, a thread per source (8 a greeting), and a
        thread's start is most of what reading a source from memory costs. The pool keeps the
        threads a turn needs idle between turns and grows under concurrent turns up to
        ``SOURCE_THREADS``; past that a source waits for a thread within its timeout (the
        context degrades, as for a slow store). A source stuck past its timeout is left behind,
        as before, and holds its thread until its store call returns."""
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=SOURCE_THREADS, thread_name_prefix="context")
            return self._pool

    def build(self, inp: ContextInput, required: Collection[str] = ()) -> BuiltContext:
        cfg = self.config
        known = (
            known_documents(inp.org_id, inp.user_id, inp.conversation_key, "" if inp.greeting else inp.text)
            if not self.sources
            else []
        )
        batch = PrefetchedStore(inp.store, known)
        view = scoped(batch, inp.org_id, read_only=True)
        request = SourceRequest(
            store=view,
            tasks=inp.tasks.with_store(view),
            org_id=inp.org_id,
            user_id=inp.user_id,
            room_id=inp.room_id,
            conversation_key=inp.conversation_key,
            text=inp.text,
            now=inp.now,
            recent_limit=cfg.recent_messages,
            knowledge_limit=cfg.knowledge_limit,
            knowledge_triggers=cfg.knowledge_triggers,
            embedder=OnceEmbedder(inp.embedder) if inp.embedder is not None else None,
            episodes_limit=cfg.episodes_limit,
            lists=self.lists,
            greeting=inp.greeting,
            reads_as_answer=inp.reads_as_answer,
        )
        specs = self.sources or default_sources(tasks_truth=1 if inp.tasks.external else 2)
        off = [s for s in specs if s.name in cfg.sources_off]
        specs = [s for s in specs if s.name not in cfg.sources_off]
        values, records = self._fetch(specs, request, required, batch if known else None)
        for spec in off:  # a lost source, not a failing one: nothing tells the model it is missing
            records[spec.name] = SourceRecord(
                spec.name, "skipped", spec.truth, spec.priority, error="switched off"
            )
        degraded = [r.name for r in records.values() if r.status in ("failed", "timeout")]
        sections = build_sections(
            values,
            {s.name: s.truth for s in specs},
            now=inp.now,
            degraded=degraded,
            fallback_user={"user_id": inp.user_id, "name": inp.user_name},
        )
        sections += agent_state_sections(values.get("agent_state") or {})
        fitted = fit(sections, cfg.token_budget, cfg.drop_order)
        if values.get("agent_state"):  # what the budget cut of the state never reaches the prompt
            kept = {s.name: s.lines for s in fitted.sections if s.name in ("open_questions", "plan_brief")}
            values["agent_state"] = {**values["agent_state"], **kept}
        return BuiltContext(values, records, fitted, degraded)

    def _fetch(
        self,
        specs: list[SourceSpec],
        request: SourceRequest,
        required: Collection[str] = (),
        batch: PrefetchedStore | None = None,
    ) -> tuple[dict[str, Any], dict[str, SourceRecord]]:
        """Every source within the sources' timeout. A source that reads only the batch's
        documents (``SourceSpec.known``) runs in this thread once the batch is held: handing a
        read from memory to a thread and back cost more than the read (six of them a turn).
        The batch itself is read in a source thread, waited for within the timeout; a batch
        that fails or is late sends those sources to threads too, each reading its own document
        within the timeout, as before."""
        timeout = self.config.source_timeout_seconds
        pool = self._threads()
        started = time.monotonic()
        here = [s for s in specs if s.known] if batch is not None else []
        futures: dict[str, Future[tuple[Any, float]]] = {
            # each source sees the turn's call context (log lines, budget) like the layer itself
            s.name: pool.submit(contextvars.copy_context().run, self._timed, s, request)
            for s in specs
            if s not in here
        }
        if here and batch is not None:
            held = pool.submit(contextvars.copy_context().run, batch.prefetch)
            try:
                ready = held.result(timeout=max(started + timeout - time.monotonic(), 0.0))
            except Exception:  # late (the sources' deadline) or failed: as if not held
                ready = False
            for s in here:
                futures[s.name] = (
                    self._here(s, request)
                    if ready
                    else pool.submit(contextvars.copy_context().run, self._timed, s, request)
                )
        values: dict[str, Any] = {}
        records: dict[str, SourceRecord] = {}
        try:
            for spec in specs:
                remaining = max(started + timeout - time.monotonic(), 0.0)
                try:
                    value, ms = futures[spec.name].result(timeout=remaining)
                except FuturesTimeout:
                    if spec.name in required and _finishes_within_budget(futures[spec.name]):
                        try:
                            value, ms = futures[spec.name].result()
                        except Exception as exc:
                            records[spec.name] = _failed(spec, exc)
                            continue
                        values[spec.name] = value
                        records[spec.name] = SourceRecord(
                            spec.name, "ok", spec.truth, spec.priority, _count(value), ms
                        )
                        continue
                    records[spec.name] = SourceRecord(
                        spec.name,
                        "timeout",
                        spec.truth,
                        spec.priority,
                        duration_ms=round(timeout * 1000, 3),
                        error=f"no answer within {timeout}s",
                    )
                    continue
                except Exception as exc:
                    records[spec.name] = _failed(spec, exc)
                    continue
                values[spec.name] = value
                status: SourceStatus = "skipped" if value is None and spec.name in RECALLED else "ok"
                records[spec.name] = SourceRecord(
                    spec.name, status, spec.truth, spec.priority, _count(value), ms
                )
        finally:
            for future in futures.values():  # one not started yet never runs; a stuck one is left behind
                future.cancel()
        return values, records

    @classmethod
    def _here(cls, spec: SourceSpec, request: SourceRequest) -> Future[tuple[Any, float]]:
        """``spec`` run in this thread, as the finished future a source thread would give."""
        done: Future[tuple[Any, float]] = Future()
        try:
            done.set_result(cls._timed(spec, request))
        except Exception as exc:
            done.set_exception(exc)
        return done

    @staticmethod
    def _timed(spec: SourceSpec, request: SourceRequest) -> tuple[Any, float]:
        t0 = time.perf_counter()
        value = spec.fetch(request)
        return value, round((time.perf_counter() - t0) * 1000, 3)
