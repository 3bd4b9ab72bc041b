"""Structured JSON logs in the Cloud Logging format; the trace across every hop."""

from __future__ import annotations

import json
import logging

import pytest
from ops_fakes import ORG, TASK_DONE, send, traced_turn

from shared_lib import tracing
from shared_lib.observability.logs import (
    LABELS_KEY,
    SPAN_KEY,
    TRACE_KEY,
    build_entry,
    log_event,
    parse_traceparent,
    record_entry,
)
from shared_lib.settings import Settings
from shared_lib.turn.callctx import call_context, current
from shared_lib.wiring.composition import apply_process_settings
from tests.conftest import configure_from_env


def test_a_line_for_a_turn_has_severity_message_trace_and_labels(monkeypatch):
    # GIVEN a turn with a W3C traceparent in project p1
    monkeypatch.setenv("CHARTER_PROJECT", "p1")
    configure_from_env()
    turn = traced_turn()
    # WHEN a layer logs for it
    entry = build_entry("layer_done", turn=turn, layer="guardian", severity="WARNING", outcome="allow")
    # THEN the line is in the Cloud Logging shape
    assert entry["severity"] == "WARNING" and entry["message"] == "layer_done"
    assert entry[TRACE_KEY] == "projects/p1/traces/4bf92f3577b34da6a3ce929d0e0e4736"
    assert entry[SPAN_KEY] == "00f067aa0ba902b7"
    assert entry[LABELS_KEY] == {"layer": "guardian", "turn_id": turn.turn_id, "org_id": "acme"}
    assert entry["outcome"] == "allow"


def test_fields_are_masked():
    entry = build_entry("x", layer="ingress", detail="mail taro@example.com please")
    assert "taro@example.com" not in json.dumps(entry, ensure_ascii=False)


def test_a_line_without_a_turn_takes_the_turn_from_the_call_context():
    # GIVEN the runner bound a turn for the layer
    turn = traced_turn()
    with call_context(turn, "brain"):
        assert current() is not None
        # WHEN code below it logs without naming the turn
        entry = build_entry("llm_retry")
    # THEN the line still carries the turn's labels and trace, and the context is gone afterwards
    assert entry[LABELS_KEY] == {"layer": "brain", "turn_id": turn.turn_id, "org_id": "acme"}
    assert entry[TRACE_KEY].endswith("/traces/4bf92f3577b34da6a3ce929d0e0e4736")
    assert current() is None


@pytest.mark.parametrize(
    "bad",
    ["", "garbage", "00-" + "0" * 32 + "-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e4736-zz-01"],
)
def test_an_invalid_traceparent_gives_no_trace_field(bad):
    assert parse_traceparent(bad) is None
    assert TRACE_KEY not in build_entry("x", turn=traced_turn(bad))


def test_json_lines_go_to_stderr_on_cloud_run(monkeypatch, capsys):
    # GIVEN a deployed environment's settings (structured logs are on by default there)
    settings = Settings.from_env({"CHARTER_ENV": "prod", "CHARTER_PROJECT": "p1"})
    assert settings.log_json is True
    apply_process_settings(settings)
    # WHEN a line is logged
    log_event("hello", layer="guardian", n=1)
    # THEN stderr has exactly one JSON object
    line = capsys.readouterr().err.strip()
    assert json.loads(line)["message"] == "hello"


def test_every_hop_carries_the_same_traceparent_and_every_layer_line_the_trace(rt, caplog, monkeypatch):
    # GIVEN the in-process chain (log_event's records go to the "charter" logger, with their entry)
    caplog.set_level(logging.INFO, logger="charter")
    # WHEN a turn goes through it
    turn_id = send(rt, TASK_DONE)
    # THEN every message of that turn on the bus carries the turn's trace, each hop its own parent
    # span (the publishing layer's: shared_lib.tracing)
    hops = [a for t, _, a, _ in rt.bus.published if a.get("turn_id") == turn_id and t != "events"]
    parents = {a.get("traceparent") for a in hops}
    assert len(hops) >= 7 and len(parents) == len(hops)
    assert {tracing.trace_id_of(p or "") for p in parents} == {tracing.trace_id_of(hops[0]["traceparent"])}
    assert parse_traceparent(hops[0]["traceparent"])
    # AND every layer's line for the turn names the same trace
    lines = [record_entry(r) for r in caplog.records if r.name == "charter"]
    mine = [e for e in lines if e.get(LABELS_KEY, {}).get("turn_id") == turn_id]
    layers = {e["layer"] for e in mine if e["message"] == "layer_done"}
    assert {"context", "brain", "guardian", "authorizer", "executor", "responder"} <= layers
    assert len({e.get(TRACE_KEY) for e in mine}) == 1 and all(e[LABELS_KEY]["org_id"] == ORG for e in mine)
