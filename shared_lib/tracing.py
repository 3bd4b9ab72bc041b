"""Tracing with OpenTelemetry: one trace per turn, across every hop.

One ``TracerProvider`` per process, set by the composition root from the settings
(``configure``): the sampler ``ParentBased(TraceIdRatioBased(CHARTER_TRACE_SAMPLE_RATIO))``,
the resource (``service.name`` = the functions-framework target or ``charter-cli``,
``service.version`` = the revision) and the exporter ``CHARTER_TRACE_EXPORTER`` names:

* ``none``        — spans get ids (log lines and the record carry them) and go nowhere: they
  are not recorded at all (the sampler drops them, so a span is its ids and nothing else:
  no attributes kept, no events, no end time; about a third of what a recorded span costs);
* ``store``       — the local stack: ``adapters.trace_exporter.StoreSpanExporter`` writes them
  to ``trace_spans`` (``charter turns show`` prints the tree);
* ``cloud_trace`` — the cloud: Cloud Trace (``opentelemetry-exporter-gcp-trace``);
* ``memory``      — tests: ``memory_exporter()`` holds the finished spans, exported at once.

A real exporter runs behind a ``BatchSpanProcessor`` (a short schedule delay; the provider
flushes it at process exit), so no span costs the serving path a round trip. The SDK marks
its export calls "instrumentation suppressed" and ``span`` starts nothing then: the store
exporter's own writes never make spans of their own.

Propagation is W3C trace context through the OpenTelemetry propagator, never parsed by hand:
``inject`` puts the current span into a message's attributes on publish (``Turn.attributes``)
and ``extract`` reads them back on delivery (``LayerRunner``); the ingress extracts a caller's
``traceparent`` header and starts a fresh trace when it is absent or invalid.

>>> carrier = {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
>>> with span("demo", parent=extract(carrier)) as s:
...     format(s.get_span_context().trace_id, "032x")
'4bf92f3577b34da6a3ce929d0e0e4736'
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY
from opentelemetry.sdk.resources import SERVICE_NAME, SERVICE_VERSION, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ParentBased, TraceIdRatioBased
from opentelemetry.semconv._incubating.attributes import db_attributes as db
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
from opentelemetry.semconv._incubating.attributes.messaging_attributes import (
    MESSAGING_DESTINATION_NAME,
    MESSAGING_OPERATION_TYPE,
    MESSAGING_SYSTEM,
)
from opentelemetry.trace import SpanKind
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from shared_lib.errors import ConfigError

if TYPE_CHECKING:
    from shared_lib.ports import LLMRequest, LLMResponse
    from shared_lib.settings import Settings

__all__ = [
    "EXPORTERS",
    "MESSAGING_DESTINATION_NAME",
    "MESSAGING_OPERATION_TYPE",
    "MESSAGING_SYSTEM",
    "SpanKind",
    "TraceConfig",
    "annotate",
    "configure",
    "current_traceparent",
    "extract",
    "flush",
    "inject",
    "llm_span",
    "memory_exporter",
    "record_llm_response",
    "span",
    "store_span",
    "tool_outcome",
    "tool_span",
    "trace_id",
    "trace_id_of",
    "with_context",
]

EXPORTERS = ("none", "store", "cloud_trace", "memory")
CLI_SERVICE = "charter-cli"
SCHEDULE_DELAY_MILLIS = 200  # a finished span waits at most this long in the batch
_PROPAGATOR = TraceContextTextMapPropagator()
_FIELDS = frozenset(_PROPAGATOR.fields)  # traceparent, tracestate


@dataclass(frozen=True)
class TraceConfig:
    """What a process's provider is made of (``configure`` keeps it while this is unchanged)."""

    exporter: str = "none"
    ratio: float = 1.0
    service: str = CLI_SERVICE
    revision: str = ""
    project: str = ""

    def __post_init__(self) -> None:
        if self.exporter not in EXPORTERS:
            raise ConfigError(
                f"CHARTER_TRACE_EXPORTER: {self.exporter!r} is not one of {', '.join(EXPORTERS)}"
            )
        if not 0.0 <= self.ratio <= 1.0:
            raise ConfigError(f"CHARTER_TRACE_SAMPLE_RATIO: {self.ratio} is not between 0 and 1")

    @classmethod
    def of(cls, settings: Settings) -> TraceConfig:
        return cls(
            exporter=settings.trace_exporter,
            ratio=settings.trace_sample_ratio,
            service=settings.target or CLI_SERVICE,
            revision=settings.revision,
            project=settings.project,
        )


class _Process:
    """This process's provider and tracer; before ``configure``, spans get ids and go nowhere."""

    def __init__(self) -> None:
        self.provider = TracerProvider(sampler=ALWAYS_OFF, shutdown_on_exit=False)
        self.tracer = self.provider.get_tracer("charter")
        self.config: TraceConfig | None = None
        self.owner: object = None
        self.memory: InMemorySpanExporter | None = None


_process = _Process()


def configure(config: TraceConfig, *, exporter: SpanExporter | None = None, owner: object = None) -> bool:
    """Make ``config`` this process's tracing; ``False`` (nothing done) when it already is.

    ``exporter`` is the ``store`` exporter the composition root builds over its store
    (``owner``): a provider is kept while the configuration and the owner are the same.
    """
    if configured(config, owner):
        return False
    processor: BatchSpanProcessor | SimpleSpanProcessor | None = None
    memory = None
    if config.exporter == "memory":
        memory = InMemorySpanExporter()
        processor = SimpleSpanProcessor(memory)  # tests read what finished, at once
    elif config.exporter in ("store", "cloud_trace"):
        exporter = exporter if config.exporter == "store" else _cloud_trace(config.project)
        if exporter is None:
            raise ConfigError("CHARTER_TRACE_EXPORTER=store needs the store's span exporter")
        processor = BatchSpanProcessor(exporter, schedule_delay_millis=SCHEDULE_DELAY_MILLIS)
    resource = Resource.create({SERVICE_NAME: config.service, SERVICE_VERSION: config.revision})
    # nothing exports: nothing is recorded (the spans keep their ids for the log lines)
    sampler = ALWAYS_OFF if processor is None else ParentBased(TraceIdRatioBased(config.ratio))
    provider = TracerProvider(sampler=sampler, resource=resource)
    if processor is not None:
        provider.add_span_processor(processor)
    previous = _process.provider
    _process.provider, _process.tracer = provider, provider.get_tracer("charter")
    _process.config, _process.owner, _process.memory = config, owner, memory
    previous.shutdown()  # flushes what the previous exporter still held
    return True


def configured(config: TraceConfig, owner: object = None) -> bool:
    """Whether ``config`` (over ``owner``'s store, for the ``store`` exporter) is in place."""
    same_owner = config.exporter != "store" or _process.owner is owner
    return _process.config == config and same_owner


def _cloud_trace(project: str) -> SpanExporter:
    from opentelemetry.exporter.cloud_trace import CloudTraceSpanExporter

    exporter: SpanExporter = CloudTraceSpanExporter(project_id=project or None)  # type: ignore[no-untyped-call]
    return exporter


def memory_exporter() -> InMemorySpanExporter:
    """The finished spans of ``CHARTER_TRACE_EXPORTER=memory`` (tests)."""
    if _process.memory is None:
        raise ConfigError("tracing is not configured with the memory exporter")
    return _process.memory


def flush(timeout_millis: int = 5000) -> bool:
    """Export every finished span now (a CLI command before it exits, tests)."""
    return _process.provider.force_flush(timeout_millis)


def exporter_name() -> str:
    return _process.config.exporter if _process.config is not None else "none"


# -- spans ------------------------------------------------------------------------------
def _suppressed() -> bool:
    return bool(otel_context.get_value(_SUPPRESS_INSTRUMENTATION_KEY))


@contextmanager
def span(
    name: str,
    *,
    kind: SpanKind = SpanKind.INTERNAL,
    attributes: Mapping[str, Any] | None = None,
    parent: otel_context.Context | None = None,
) -> Iterator[trace.Span]:
    """A current span around the block (ERROR with the exception when the block raises).

    ``parent`` is a context ``extract`` gave (a remote parent, or none: a fresh trace);
    without it the current span is the parent. Nothing starts while an exporter exports.
    """
    if _suppressed():
        yield trace.INVALID_SPAN
        return
    clean = {k: v for k, v in (attributes or {}).items() if v is not None}
    with _process.tracer.start_as_current_span(name, context=parent, kind=kind, attributes=clean) as current:
        yield current


def annotate(attributes: Mapping[str, Any]) -> None:
    """Add ``attributes`` (``None`` values skipped) to the current span."""
    current = trace.get_current_span()
    if current.is_recording():
        current.set_attributes({k: v for k, v in attributes.items() if v is not None})


def store_span(system: str, operation: str = "transaction") -> Any:
    """The span of one store transaction (``db.system`` firestore, sqlite or memory)."""
    return span(
        f"{system} {operation}",
        kind=SpanKind.CLIENT,
        attributes={db.DB_SYSTEM: system, db.DB_SYSTEM_NAME: system, db.DB_OPERATION_NAME: operation},
    )


def tool_span(tool: str, call_id: str, *, dry_run: bool = False) -> Any:
    """The span of one tool execution: ``execute_tool <tool>`` (the GenAI tool conventions)."""
    return span(
        f"execute_tool {tool}",
        attributes={
            gen_ai.GEN_AI_OPERATION_NAME: "execute_tool",
            gen_ai.GEN_AI_TOOL_NAME: tool,
            gen_ai.GEN_AI_TOOL_CALL_ID: call_id,
            "charter.tool.dry_run": dry_run,
        },
    )


def tool_outcome(*, ok: bool, error_code: str | None, replayed: bool) -> None:
    """What the executor decided about the call, on the current tool span (a failure is ERROR)."""
    current = trace.get_current_span()
    if not current.is_recording():
        return
    annotate({"charter.tool.ok": ok, "charter.tool.replayed": replayed, "error.type": error_code or None})
    if not ok:
        current.set_status(trace.StatusCode.ERROR, error_code or "failed")


# -- the GenAI semantic conventions (one span per LLM call) -----------------------------
def llm_span(request: LLMRequest, *, provider: str = "anthropic") -> Any:
    """The span of one model call with its retries: ``chat <model>``, kind CLIENT."""
    return span(
        f"chat {request.model}",
        kind=SpanKind.CLIENT,
        attributes={
            gen_ai.GEN_AI_OPERATION_NAME: "chat",
            gen_ai.GEN_AI_PROVIDER_NAME: provider,
            gen_ai.GEN_AI_SYSTEM: provider,
            gen_ai.GEN_AI_REQUEST_MODEL: request.model,
            gen_ai.GEN_AI_REQUEST_MAX_TOKENS: request.max_tokens,
            gen_ai.GEN_AI_REQUEST_TEMPERATURE: request.temperature,
            "charter.llm.call_type": request.call_type,
        },
    )


def record_llm_response(current: trace.Span, response: LLMResponse) -> None:
    """The answer's model, tokens (cache reads and writes apart) and finish reason on the span."""
    if not current.is_recording():
        return
    usage = response.usage
    current.set_attributes(
        {
            gen_ai.GEN_AI_RESPONSE_MODEL: response.model,
            gen_ai.GEN_AI_USAGE_INPUT_TOKENS: usage.input_tokens,
            gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS: usage.output_tokens,
            gen_ai.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: usage.cache_read_input_tokens,
            gen_ai.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS: usage.cache_creation_input_tokens,
            gen_ai.GEN_AI_RESPONSE_FINISH_REASONS: [response.stop_reason or "interrupted"],
            "charter.llm.attempts": response.attempts,
        }
    )


# -- propagation ------------------------------------------------------------------------
def extract(carrier: Mapping[str, str]) -> otel_context.Context:
    """The context a message's attributes or a request's headers carry (names in any case).

    An absent or invalid ``traceparent`` gives a context without a span: a fresh trace.
    """
    lowered = {name: str(v) for k, v in carrier.items() if (name := str(k).lower()) in _FIELDS}
    if "traceparent" not in lowered:
        return otel_context.Context()
    return _PROPAGATOR.extract(lowered, context=otel_context.Context())


def inject(carrier: dict[str, str]) -> dict[str, str]:
    """``carrier`` with the current span's ``traceparent`` (and ``tracestate``) when there is one."""
    _PROPAGATOR.inject(carrier)
    return carrier


def with_context(attributes: Mapping[str, str]) -> dict[str, str]:
    """A message's attributes with the current span as its trace context, unless they carry one
    (every bus adapter's publish: events and alerts stay in the trace of the turn that made them)."""
    out = dict(attributes)
    return out if "traceparent" in out else inject(out)


def current_traceparent() -> str:
    """The W3C ``traceparent`` of the current span (``""`` outside any)."""
    return inject({}).get("traceparent", "")


def trace_id_of(traceparent: str) -> str:
    """The 32-hex trace id a W3C ``traceparent`` names; ``""`` when it is not valid."""
    return trace_id(trace.get_current_span(extract({"traceparent": traceparent})))


def trace_id(current: trace.Span | None = None) -> str:
    """The 32-hex trace id of ``current`` (default: the current span); ``""`` when invalid."""
    ctx = (current or trace.get_current_span()).get_span_context()
    return format(ctx.trace_id, "032x") if ctx.is_valid else ""
