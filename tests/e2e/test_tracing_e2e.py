"""One trace per turn on the local stack: every function process exports its spans to the
emulator's ``trace_spans`` (``CHARTER_TRACE_EXPORTER=store``), the W3C context travels in
the Pub/Sub message attributes, the LLM call is a GenAI span with its tokens, the log lines
of the turn carry its trace id, and ``charter turns show`` prints the span tree."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

ORG = "demo"
USER = "u-suzuki"
CHAIN = ["context", "brain", "guardian", "authorizer", "executor", "responder", "observer"]


def spans_where(stack: Any, field: str, value: str) -> list[dict[str, Any]]:
    return [doc for _, doc in stack.store.query("trace_spans", where=[(field, "==", value)])]


def chain(
    spans: list[dict[str, Any]], parent: dict[str, Any], names: list[str]
) -> list[dict[str, Any]] | None:
    """The spans named ``names`` in order, each a child of the one before (the first a child of
    ``parent``), or ``None``. A stage delivered twice on a busy machine has two spans of its name
    (the duplicate's publishes nothing), so every candidate is tried."""
    if not names:
        return []
    for span in (s for s in spans if s["name"] == names[0] and s["parent_span_id"] == parent["span_id"]):
        rest = chain(spans, span, names[1:])
        if rest is not None:
            return [span, *rest]
    return None


def ancestors(spans: list[dict[str, Any]], span: dict[str, Any]) -> list[str]:
    by_id = {s["span_id"]: s for s in spans}
    names, parent = [], span.get("parent_span_id")
    while parent in by_id:
        names.append(by_id[parent]["name"])
        parent = by_id[parent].get("parent_span_id")
    return names


@pytest.mark.e2e
def test_a_turn_is_one_trace_over_every_layer_in_order_with_its_llm_tokens_and_its_log_lines(local_stack):
    # GIVEN the local stack; WHEN a webhook makes a turn
    room = f"room-{uuid.uuid4().hex[:8]}"
    resp = local_stack.send("http", "今日は暑いね〜", org=ORG, room=room, user=USER)
    assert resp.status == 200, resp.body
    turn_id = resp.body["turn_ids"][0]
    record = local_stack.record(ORG, turn_id)
    trace_id = record["trace_id"]
    assert isinstance(trace_id, str) and len(trace_id) == 32

    # THEN its spans arrive (each process exports in batches): the request its root, each layer
    # run the child of the hop that published to it, in order ...
    hop_names = ["ingress accept", *(f"layer {x}" for x in CHAIN)]

    def chain_complete() -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
        spans = spans_where(local_stack, "trace_id", trace_id)
        if not any(s["name"].startswith("chat ") for s in spans):
            return None
        for root in (s for s in spans if s["name"] == "ingress" and s["parent_span_id"] is None):
            if (hops := chain(spans, root, hop_names)) is not None:
                return spans, [root, *hops]
        return None

    spans, hops = local_stack.wait_for(
        chain_complete,
        progress=lambda: sorted({s["name"] for s in spans_where(local_stack, "trace_id", trace_id)}),
    )
    # ... as exactly one trace for the turn, the record's
    assert {s["trace_id"] for s in spans_where(local_stack, "turn_id", turn_id)} == {trace_id}
    # ... each exported by the process of its own target
    root = hops.pop(0)
    assert root["service"] == "ingress"
    assert [h["service"] for h in hops[1:]] == CHAIN  # type: ignore[index]
    assert [h["start_ns"] for h in hops] == sorted(h["start_ns"] for h in hops)  # type: ignore[index]
    for hop in hops[1:]:
        attrs = hop["attributes"]  # type: ignore[index]
        assert attrs["charter.turn_id"] == turn_id and attrs["charter.org_id"] == ORG
    # ... and the brain's LLM call is a GenAI span with its tokens, inside the brain's layer span
    calls = [s for s in spans if s["name"].startswith("chat ") and s["service"] == "brain"]
    assert calls, [s["name"] for s in spans]
    for call in calls:
        attrs = call["attributes"]
        assert "layer brain" in ancestors(spans, call)
        assert attrs["gen_ai.operation.name"] == "chat" and attrs["gen_ai.provider.name"] == "anthropic"
        assert attrs["gen_ai.request.model"] and attrs["gen_ai.response.model"]
        assert attrs["gen_ai.usage.input_tokens"] > 0 and attrs["gen_ai.usage.output_tokens"] > 0
        assert "gen_ai.usage.cache_read.input_tokens" in attrs
        assert "gen_ai.usage.cache_creation.input_tokens" in attrs

    # AND every log line of that turn, in every layer's log, carries its trace id
    logs = Path(local_stack.root) / "logs"
    seen: dict[str, int] = {}
    for layer in ["ingress", *CHAIN]:
        for line in (logs / f"{layer}.log").read_text(encoding="utf-8", errors="replace").splitlines():
            if turn_id in line and line.lstrip().startswith("{"):
                assert trace_id in line, (layer, line[:300])
                seen[layer] = seen.get(layer, 0) + 1
    assert set(seen) >= {"ingress", "context", "brain", "responder"}, seen


@pytest.mark.e2e
def test_turns_show_prints_the_turns_span_tree(local_stack):
    # GIVEN a turn through the stack and an operator in the folder the stack runs from
    room = f"room-{uuid.uuid4().hex[:8]}"
    resp = local_stack.send("http", "おはよう", org=ORG, room=room, user=USER)
    turn_id = resp.body["turn_ids"][0]
    trace_id = local_stack.record(ORG, turn_id)["trace_id"]
    local_stack.wait_for(
        lambda: any(s["name"] == "layer observer" for s in spans_where(local_stack, "trace_id", trace_id)), 60
    )
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CHARTER_", "FIRESTORE_", "PUBSUB_", "GOOGLE_", "ANTHROPIC_"))
    }
    run = functools.partial(subprocess.run, env=env, cwd=local_stack.workdir, capture_output=True, text=True)
    cli = [sys.executable, "-m", "infra.cli", "turns", "show", turn_id, "--org", ORG]
    # WHEN they show the turn
    shown = run(cli, timeout=120)
    # THEN the span tree follows the trail, with offsets and durations
    assert shown.returncode == 0, shown.stderr[-2000:]
    tree = shown.stdout[shown.stdout.index(f"spans (trace {trace_id})") :].splitlines()[1:]
    names = [line.split("  +")[0].strip() for line in tree]
    assert names[:3] == ["ingress", "ingress accept", "layer context"]
    assert {f"layer {x}" for x in CHAIN} <= set(names)
    assert all(" ms" in line for line in tree)
    as_json = run([*cli, "--json"], timeout=120)
    assert as_json.returncode == 0, as_json.stderr[-2000:]
    data = json.loads(as_json.stdout)
    assert data["trace"]["trace_id"] == trace_id and len(data["trace"]["spans"]) == len(tree)
