"""OpenTelemetry tracing: one trace per turn across the in-process chain, the W3C context in
the message attributes, the GenAI span of an LLM call, the tool and store transaction spans,
sampling, the settings, and the store exporter behind ``charter turns show``."""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode
from test_pipeline import ORG
from test_pipeline import runtime as chain_runtime

from infra.fake_llm import FakeAnthropicServer
from infra.fake_llm.port import InProcessScriptedLLM
from infra.webhook_sender import build_request
from shared_lib import tracing
from shared_lib.adapters.anthropic_llm import AnthropicLLM, RetryPolicy
from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.adapters.sqlite_store import SQLiteStore
from shared_lib.cli.operations import turns_show
from shared_lib.errors import ConfigError
from shared_lib.layers.ingress import handle_http
from shared_lib.observability.logs import record_entry
from shared_lib.ops.spans import cloud_trace_url, trace_section
from shared_lib.ports import LLMRequest
from shared_lib.runtime import Runtime
from shared_lib.settings import Settings
from shared_lib.wiring.composition import build_runtime

CALLER = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
CHAIN = ["context", "brain", "guardian", "authorizer", "executor", "responder", "observer"]
TASK = "田中さんに明日までに見積書のタスクをお願い"


@pytest.fixture(autouse=True)
def _tracing_back_to_none() -> Iterator[None]:
    yield
    tracing.configure(tracing.TraceConfig())


def runtime(exporter: str = "memory", **env: str) -> Runtime:
    """The in-process chain of ``test_pipeline`` (its directory), tracing to ``exporter``."""
    rt = chain_runtime(CHARTER_TRACE_EXPORTER=exporter, **env)
    if exporter == "memory":
        tracing.memory_exporter().clear()
    return rt


def post(rt: Runtime, text: str, event_id: str, **headers: str) -> str:
    _, signed, body = build_request(
        "http", text, org=ORG, room="r1", user="u1", event_id=event_id, secrets=rt.channel_secrets
    )
    status, answer = handle_http(rt, "http", "POST", {**signed, **headers}, {}, body)
    assert status == 200, answer
    return str(answer["turn_ids"][0])


def hex_trace(span: ReadableSpan) -> str:
    return format(span.context.trace_id, "032x")


def child_of(span: ReadableSpan, parent: ReadableSpan) -> bool:
    return span.parent is not None and span.parent.span_id == parent.context.span_id


def spans() -> list[ReadableSpan]:
    return sorted(tracing.memory_exporter().get_finished_spans(), key=lambda s: s.start_time or 0)


def test_a_turn_is_one_trace_whose_layer_spans_chain_parent_to_child_in_layer_order():
    # GIVEN the in-process chain with the in-memory exporter
    rt = runtime()
    # WHEN a webhook without a traceparent makes a turn
    turn_id = post(rt, TASK, "e1")
    # THEN every span is of one trace, the record's
    record = rt.store.get(f"orgs/{ORG}/observability/{turn_id}")
    assert record is not None
    finished = spans()
    assert {hex_trace(s) for s in finished} == {record["trace_id"]}
    # the request is the root; each layer run is a CONSUMER child of the span that published to it
    ingress = next(s for s in finished if s.name == "ingress")
    assert ingress.parent is None and ingress.kind is SpanKind.SERVER
    hops = [next(s for s in finished if s.name == "ingress accept")]
    for layer in CHAIN:  # the chain: each layer's span is the child of the one that published to it
        hops.append(next(s for s in finished if s.name == f"layer {layer}" and child_of(s, hops[-1])))
    assert [s.start_time for s in hops] == sorted(s.start_time for s in hops)
    # what else ran is in the same trace under its publisher: the background memory (compaction)
    # after the reply. The shadow brain (no shadow mode here) and the observer's own record on
    # turns.events are kept from their targets by the subscriptions' filters: no span, no run.
    others = [s for s in finished if s.name.startswith("layer ") and s not in hops]
    assert {s.name for s in others} == {"layer memory"}
    for span in hops[1:]:
        attrs = span.attributes or {}
        assert span.kind is SpanKind.CONSUMER
        assert attrs["charter.turn_id"] == turn_id and attrs["charter.step"] == 0
        assert attrs["charter.org_id"] == ORG and attrs["charter.layer"] == span.name.removeprefix("layer ")
        assert attrs["messaging.system"] == "gcp_pubsub"


def test_the_executor_runs_each_tool_call_in_its_own_span_and_stores_commit_in_spans():
    rt = runtime()
    post(rt, TASK, "e2")
    finished = spans()
    executor = next(s for s in finished if s.name == "layer executor")
    tools = [s for s in finished if s.name.startswith("execute_tool ")]
    assert len(tools) == 1
    attrs = tools[0].attributes or {}
    assert tools[0].name == f"execute_tool {attrs['gen_ai.tool.name']}"
    assert attrs["gen_ai.operation.name"] == "execute_tool" and attrs["charter.tool.ok"] is True
    assert child_of(tools[0], executor)
    # the layer claims commit in transactions: spans of the memory store inside the layer runs
    claims = [s for s in finished if s.name == "memory transaction"]
    assert claims and all((s.attributes or {})["db.system"] == "memory" for s in claims)


def test_a_valid_traceparent_header_is_the_turns_parent_and_an_invalid_or_absent_one_starts_fresh():
    rt = runtime()
    post(rt, "こんにちは", "e3", traceparent=CALLER)
    ingress = next(s for s in spans() if s.name == "ingress")
    assert hex_trace(ingress) == CALLER.split("-")[1]
    assert ingress.parent is not None and format(ingress.parent.span_id, "016x") == CALLER.split("-")[2]

    seen = set()
    for event, header in (("e4", {"traceparent": "00-not-a-trace-01"}), ("e5", {})):
        tracing.memory_exporter().clear()
        post(rt, "こんにちは", event, **header)
        ingress = next(s for s in spans() if s.name == "ingress")
        assert ingress.parent is None
        assert hex_trace(ingress) != CALLER.split("-")[1]
        seen.add(hex_trace(ingress))
    assert len(seen) == 2  # two fresh traces


def test_a_caller_may_spell_the_trace_header_in_any_case_and_other_attributes_are_not_read():
    parent = tracing.extract({"TraceParent": CALLER, "X-Other": "1", "turn_id": "t1"})
    with tracing.span("child", parent=parent) as s:
        assert tracing.trace_id(s) == CALLER.split("-")[1]
    assert tracing.extract({"turn_id": "t1"}) == tracing.extract({}) == {}


def test_with_no_exporter_spans_are_not_recorded_yet_lines_and_messages_carry_their_trace():
    # GIVEN tracing that exports nowhere
    tracing.configure(tracing.TraceConfig(exporter="none"))
    # WHEN a turn's span starts under a caller's trace
    with tracing.span("layer guardian", parent=tracing.extract({"traceparent": CALLER})) as s:
        # THEN it records nothing (no attributes kept), yet has ids in the caller's trace
        assert not s.is_recording()
        assert tracing.trace_id(s) == CALLER.split("-")[1]
        assert tracing.current_traceparent().split("-")[1] == CALLER.split("-")[1]
        assert tracing.current_traceparent().split("-")[2] != CALLER.split("-")[2]  # its own span id


def test_sampling_ratio_zero_exports_no_span_but_the_record_and_the_log_lines_carry_the_trace(caplog):
    rt = runtime(CHARTER_TRACE_SAMPLE_RATIO="0")
    with caplog.at_level(logging.INFO):
        turn_id = post(rt, "こんにちは", "e6")
    assert tracing.memory_exporter().get_finished_spans() == ()
    record = rt.store.get(f"orgs/{ORG}/observability/{turn_id}")
    assert record is not None
    trace_id = record["trace_id"]
    assert isinstance(trace_id, str) and len(trace_id) == 32 and set(trace_id) != {"0"}
    entries = [record_entry(r) for r in caplog.records]
    lines = [json.dumps(e, ensure_ascii=False) for e in entries if turn_id in json.dumps(e)]
    assert lines and all(trace_id in line for line in lines)


def test_a_callers_sampled_traceparent_is_followed_whatever_the_ratio():
    rt = runtime(CHARTER_TRACE_SAMPLE_RATIO="0")
    post(rt, "こんにちは", "e7", traceparent=CALLER)
    assert {hex_trace(s) for s in spans()} == {CALLER.split("-")[1]}


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("CHARTER_TRACE_EXPORTER", "jaeger"),
        ("CHARTER_TRACE_SAMPLE_RATIO", "half"),
        ("CHARTER_TRACE_SAMPLE_RATIO", "1.5"),
        ("CHARTER_TRACE_SAMPLE_RATIO", "-0.1"),
    ],
)
def test_a_bad_trace_setting_is_a_config_error_naming_it(name, value):
    with pytest.raises(ConfigError, match=name):
        Settings.from_env({"CHARTER_ENV": "test", name: value})


def test_the_trace_exporter_defaults_to_cloud_trace_in_the_cloud_and_none_elsewhere():
    assert Settings.from_env({"CHARTER_ENV": "test"}).trace_exporter == "none"
    cloud = Settings.from_env({"CHARTER_ENV": "prod", "CHARTER_PROJECT": "p"})
    assert cloud.trace_exporter == "cloud_trace" and tracing.TraceConfig.of(cloud).service == "charter-cli"


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    fake = FakeAnthropicServer().start()
    yield fake
    fake.stop()


def llm_request() -> LLMRequest:
    return LLMRequest(
        call_type="integration",
        model="claude-sonnet-4-6",
        max_tokens=300,
        system=[{"type": "text", "text": "ソウルくん" * 400, "cache_control": {"type": "ephemeral"}}],
        messages=[{"role": "user", "content": "おはよう"}],
    )


def genai(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def test_an_llm_call_is_one_client_span_with_the_genai_conventions(server):
    tracing.configure(tracing.TraceConfig(exporter="memory"))
    llm = AnthropicLLM(api_key="test", base_url=server.url, policy=RetryPolicy(max_retries=0))
    first, second = llm.complete(llm_request()), llm.complete(llm_request())
    calls = spans()
    assert [s.name for s in calls] == ["chat claude-sonnet-4-6"] * 2
    assert all(s.kind is SpanKind.CLIENT for s in calls)
    for span, response in zip(calls, (first, second), strict=True):
        attrs = genai(span)
        assert attrs["gen_ai.operation.name"] == "chat" and attrs["gen_ai.provider.name"] == "anthropic"
        assert attrs["gen_ai.request.model"] == "claude-sonnet-4-6"
        assert attrs["gen_ai.response.model"] == response.model
        assert attrs["gen_ai.usage.input_tokens"] == response.usage.input_tokens > 0
        assert attrs["gen_ai.usage.output_tokens"] == response.usage.output_tokens > 0
        assert attrs["gen_ai.usage.cache_creation.input_tokens"] == response.usage.cache_creation_input_tokens
        assert attrs["gen_ai.usage.cache_read.input_tokens"] == response.usage.cache_read_input_tokens
        assert attrs["gen_ai.response.finish_reasons"] == (response.stop_reason,)
    # the cached system block: written by the first call, read by the second
    assert genai(calls[0])["gen_ai.usage.cache_creation.input_tokens"] > 0
    assert genai(calls[1])["gen_ai.usage.cache_read.input_tokens"] > 0


def test_a_failed_llm_call_is_an_error_span(server):
    tracing.configure(tracing.TraceConfig(exporter="memory"))
    url = server.url
    server.stop()  # nothing listens any more: the call fails as unavailable
    llm = AnthropicLLM(api_key="test", base_url=url, policy=RetryPolicy(max_retries=0))
    with pytest.raises(Exception, match="llm_unavailable"):
        llm.complete(llm_request())
    [span] = spans()
    assert span.status.status_code is StatusCode.ERROR and span.events[0].name == "exception"


def test_the_in_process_scripted_model_makes_the_same_llm_span():
    tracing.configure(tracing.TraceConfig(exporter="memory"))
    response = InProcessScriptedLLM().complete(llm_request())
    [span] = spans()
    assert genai(span)["gen_ai.provider.name"] == "charter.scripted"
    assert genai(span)["gen_ai.usage.input_tokens"] == response.usage.input_tokens


def test_each_store_adapter_commits_a_transaction_in_a_span(tmp_path):
    tracing.configure(tracing.TraceConfig(exporter="memory"))
    for store in (MemoryStore(), SQLiteStore(tmp_path / "s.sqlite")):
        store.run_transaction(lambda txn: txn.set("a/b", {"x": 1}))
    assert [(s.name, genai(s)["db.system"]) for s in spans()] == [
        ("memory transaction", "memory"),
        ("sqlite transaction", "sqlite"),
    ]


def test_the_store_exporter_writes_every_span_once_and_its_own_writes_make_none():
    store = MemoryStore()
    rt = build_runtime(
        {"CHARTER_ENV": "test", "CHARTER_LLM": "none", "CHARTER_TRACE_EXPORTER": "store"}, store=store
    )
    with tracing.span("probe"):
        rt.store.run_transaction(lambda txn: txn.set("a/b", {"x": 1}))
    assert tracing.flush()
    assert tracing.flush()  # a second export round would carry the exporter's own spans, if it made any
    docs = [doc for path, doc in store.dump().items() if path.startswith("trace_spans/")]
    assert sorted(d["name"] for d in docs) == ["memory transaction", "probe"]
    assert all(d["expires_at"] > d["start"] for d in docs)


def test_the_store_exporter_writes_a_batch_of_spans_in_one_commit_per_400_and_no_transaction():
    # GIVEN 450 finished spans, as a process's batch processor hands them over
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from infra.bench.hops import CountingStore
    from shared_lib.adapters.trace_exporter import StoreSpanExporter

    finished = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(finished))
    tracer = provider.get_tracer("test")
    for i in range(450):
        with tracer.start_as_current_span(f"s{i}"):
            pass
    spans = finished.get_finished_spans()
    store = CountingStore(MemoryStore())
    # WHEN the store exporter exports them
    assert StoreSpanExporter(store).export(spans) == SpanExportResult.SUCCESS
    # THEN two commits carry them (400 and 50), with no transaction's begin before either
    assert dict(store.ops["ingress"]) == {"set_many": 2}
    # AND every span is one document, once
    docs = [d for p, d in store.inner.dump().items() if p.startswith("trace_spans/")]
    assert sorted(d["name"] for d in docs) == sorted(f"s{i}" for i in range(450))


def test_turns_show_prints_the_span_tree_from_the_store_exporter(capsys):
    rt = runtime("store")
    turn_id = post(rt, TASK, "e8")
    assert tracing.flush()
    args = argparse.Namespace(turn_id=turn_id, org=ORG, shadow=False, json=False)
    assert turns_show(rt, args) == 0
    text = capsys.readouterr().out
    tree = text[text.index("spans (trace ") :].splitlines()[1:]
    names = [line.split("  +")[0].strip() for line in tree]
    assert names[:3] == ["ingress", "ingress accept", "layer context"]
    assert "execute_tool" in text and " ms" in tree[0]
    # indentation follows the parent chain: each hop one level deeper than the one that published it
    indent = {line.split("  +")[0].strip(): len(line) - len(line.lstrip()) for line in tree}
    assert indent["ingress"] < indent["ingress accept"] < indent["layer context"] < indent["layer brain"]

    args.json = True
    assert turns_show(rt, args) == 0
    data = json.loads(capsys.readouterr().out)
    rows = data["trace"]["spans"]
    assert data["trace"]["trace_id"] == data["record"]["trace_id"]
    # depth first, children by start: the chain, then the background memory (on the responder's
    # completed); the filtered subscriptions (shadow brain, the observer's own records) ran nothing
    layers = [r["name"].removeprefix("layer ") for r in rows if r["name"].startswith("layer ")]
    assert layers == [*CHAIN, "memory"]
    assert rows[0]["offset_ms"] == 0.0 and all(r["duration_ms"] >= 0 for r in rows)


def test_turns_show_points_at_cloud_trace_when_the_spans_went_there():
    settings = Settings.from_env(
        {"CHARTER_ENV": "test", "CHARTER_TRACE_EXPORTER": "cloud_trace", "CHARTER_PROJECT": "p"}
    )
    data, text = trace_section(MemoryStore(), "4bf92f3577b34da6a3ce929d0e0e4736", settings)
    assert data["cloud_trace_url"] == cloud_trace_url("p", "4bf92f3577b34da6a3ce929d0e0e4736")
    assert data["cloud_trace_url"] in text
