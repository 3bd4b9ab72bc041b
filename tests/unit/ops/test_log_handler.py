"""The one Cloud Logging handler on the root logger: every stdlib record as a masked JSON entry
that carries the current OpenTelemetry span (else the turn's traceparent) and the turn's labels."""

from __future__ import annotations

import inspect
import json
import logging
import warnings
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from ops_fakes import TRACE_ID, TRACEPARENT, traced_turn

from shared_lib.observability import logs
from shared_lib.observability.logs import (
    LABELS_KEY,
    SAMPLED_KEY,
    SOURCE_KEY,
    SPAN_KEY,
    TRACE_KEY,
    CloudLoggingHandler,
)
from shared_lib.turn.callctx import call_context

PHONE, EMAIL, API_KEY = "090-1234-5678", "taro@example.com", "sk-ant-api03-AbCdEfGhIjKlMnOp"


@pytest.fixture
def json_logs() -> None:
    logs.configure(json_logs=True, project="p1")  # the autouse fixture configures it back


def lines(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in capsys.readouterr().err.splitlines()]


def test_a_stdlib_line_in_a_span_and_a_turn_carries_the_span_the_labels_and_its_source(json_logs, capsys):
    # GIVEN an OpenTelemetry span (an SDK provider exporting to memory) inside a layer's call context
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    turn = traced_turn()
    with call_context(turn, "guardian"), provider.get_tracer("test").start_as_current_span("guardian"):
        # WHEN a module logs with the standard library
        logging.getLogger("some.module").warning("checked %d rules", 3)
        written_at = inspect.currentframe().f_lineno - 1
    (span,) = exporter.get_finished_spans()
    # THEN one JSON line carries that span's trace and span id (not the turn's parent span)
    (entry,) = lines(capsys)
    assert entry[TRACE_KEY] == f"projects/p1/traces/{span.context.trace_id:032x}"
    assert entry[SPAN_KEY] == f"{span.context.span_id:016x}" != "00f067aa0ba902b7"
    assert entry[SAMPLED_KEY] is True
    # AND the turn's labels, the right severity and message, and where it was written
    assert entry[LABELS_KEY] == {"layer": "guardian", "turn_id": turn.turn_id, "org_id": "acme"}
    assert (entry["severity"], entry["message"], entry["logger"]) == (
        "WARNING",
        "checked 3 rules",
        "some.module",
    )
    assert entry[SOURCE_KEY] == {
        "file": __file__,
        "line": str(written_at),
        "function": "test_a_stdlib_line_in_a_span_and_a_turn_carries_the_span_the_labels_and_its_source",
    }
    assert entry["time"].endswith("Z")


def test_outside_a_span_the_call_context_gives_the_trace_and_outside_both_there_is_none(json_logs, capsys):
    # GIVEN a turn's call context and no span
    with call_context(traced_turn(), "brain"):
        logging.getLogger("shared_lib.brain.vault").error("no key")
    # WHEN a line is written outside both
    logging.getLogger("shared_lib.brain.vault").error("no key either")
    inside, outside = lines(capsys)
    # THEN the first has the traceparent's trace and parent span, the second no trace keys at all
    assert inside[TRACE_KEY] == f"projects/p1/traces/{TRACE_ID}" and inside[SPAN_KEY] == "00f067aa0ba902b7"
    assert inside["severity"] == "ERROR" and inside[LABELS_KEY]["layer"] == "brain"
    assert not {TRACE_KEY, SPAN_KEY, SAMPLED_KEY} & set(outside) and outside[LABELS_KEY] == {"layer": ""}


def test_the_message_the_args_the_extra_fields_and_the_stack_trace_are_masked(json_logs, capsys):
    log = logging.getLogger("shared_lib.tools.converter")
    # WHEN personal data and a key are in the message, the %s args, an extra field and an exception
    log.warning(f"mail {EMAIL}")
    log.warning("call %s with %s", PHONE, API_KEY)
    log.warning("sending", extra={"recipient": EMAIL, "detail": {"phone": PHONE}})
    try:
        raise ValueError(f"bad key {API_KEY} for {EMAIL}")
    except ValueError:
        log.exception("send failed")
    text = capsys.readouterr().err
    # THEN none of them is in the output, and each is a placeholder where it was
    for secret in (PHONE, EMAIL, API_KEY):
        assert secret not in text
    message, args, extra, exc = (json.loads(line) for line in text.splitlines())
    assert message["message"] == "mail [EMAIL_1]"
    assert args["message"].startswith("call [PHONE_1] with [API_KEY")
    assert extra["recipient"] == "[EMAIL_1]" and extra["detail"] == {"phone": "[PHONE_1]"}
    # AND the exception is a Python traceback Error Reporting parses, at ERROR
    assert exc["severity"] == "ERROR" and exc["message"] == "send failed"
    assert exc["stack_trace"].startswith("Traceback (most recent call last):")
    assert exc["stack_trace"].splitlines()[-1].startswith("ValueError: bad key [API_KEY")


def test_configured_twice_one_handler_and_library_loggers_and_warnings_are_json_too(json_logs, capsys):
    # WHEN the composition root configures again (every build_runtime does)
    logs.configure(json_logs=True, project="p1")
    # THEN the root logger has one handler of ours
    assert sum(isinstance(h, CloudLoggingHandler) for h in logging.getLogger().handlers) == 1
    # AND a library's logger and a warning come out as JSON lines
    logging.getLogger("urllib3.connectionpool").warning("Retrying (%d) after %s", 1, EMAIL)
    warnings.warn("old API", DeprecationWarning, stacklevel=1)
    library, warned = lines(capsys)
    assert (library["logger"], library["severity"]) == ("urllib3.connectionpool", "WARNING")
    assert library["message"] == "Retrying (1) after [EMAIL_1]"
    assert (warned["logger"], warned["severity"]) == ("py.warnings", "WARNING")
    assert "DeprecationWarning: old API" in warned["message"] and not warned["message"].endswith("\n")


def test_log_event_is_one_entry_of_the_same_handler_with_its_fields_and_its_caller(json_logs, capsys):
    # WHEN a layer logs an event with fields
    returned = logs.log_event("flags_fail_safe", layer="flags", severity="NOTICE", error=f"for {EMAIL}")
    # THEN one line, the returned entry plus time and the caller's source location
    (entry,) = lines(capsys)
    assert {k: v for k, v in entry.items() if k not in ("time", SOURCE_KEY)} == returned
    assert (entry["severity"], entry["event"], entry["error"]) == (
        "NOTICE",
        "flags_fail_safe",
        "for [EMAIL_1]",
    )
    assert entry[SOURCE_KEY]["file"] == __file__


def test_without_json_lines_are_readable_from_warning_up_and_masked(capsys):
    # GIVEN a developer run or the operator CLI (CHARTER_LOG_JSON off)
    logs.configure(json_logs=False, project="p1")
    log = logging.getLogger("shared_lib.layers.shadow")
    log.setLevel(logging.INFO)  # the logger would pass INFO: the handler is what keeps it quiet
    try:
        # WHEN an info and a warning are logged, and an event at INFO
        log.info("candidate ran")
        log.warning("shadow candidate failed in %s: %s", "brain", PHONE)
        logs.log_event("layer_done", layer="guardian", outcome="allow")
    finally:
        log.setLevel(logging.NOTSET)
    # THEN only the warning is printed, as one readable line, masked
    assert capsys.readouterr().err.splitlines() == [
        "WARNING shared_lib.layers.shadow: shadow candidate failed in brain: [PHONE_1]"
    ]


def test_parse_traceparent_reads_the_w3c_header():
    assert logs.parse_traceparent(TRACEPARENT) == (TRACE_ID, "00f067aa0ba902b7", True)
    assert logs.parse_traceparent(f"00-{TRACE_ID}-00f067aa0ba902b7-00") == (
        TRACE_ID,
        "00f067aa0ba902b7",
        False,
    )
    assert logs.parse_traceparent(f"ff-{TRACE_ID}-00f067aa0ba902b7-01") is None  # version ff is invalid


def test_a_line_the_logger_would_drop_is_neither_built_nor_masked(monkeypatch, capsys):
    # GIVEN readable logs in a process that logs from WARNING up (the root's default level; a
    # test run before may have lowered it), and masking that counts its calls
    logs.configure(json_logs=False, project="p1")
    root, events = logging.getLogger(), logging.getLogger(logs.EVENT_LOGGER)
    levels = root.level, events.level
    root.setLevel(logging.WARNING)  # setLevel, not an attribute: the loggers cache their levels
    events.setLevel(logging.NOTSET)
    try:
        said_when_dropped(monkeypatch, capsys)
    finally:
        root.setLevel(levels[0])
        events.setLevel(levels[1])


def said_when_dropped(monkeypatch, capsys) -> None:
    masked: list[Any] = []
    real = logs.Sanitizer.default().mask_obj
    monkeypatch.setattr(logs.Sanitizer.default(), "mask_obj", lambda v, *a, **k: masked.append(v) or real(v))
    # WHEN a stage logs an INFO line with a customer's phone number
    assert logs.log_event("layer_done", layer="guardian", note=f"田中さん {PHONE}") is None
    # THEN nothing was masked or written
    assert masked == [] and capsys.readouterr().err == ""
    # AND a WARNING line is still built, masked and written once
    entry = logs.log_event("claim_superseded", layer="guardian", severity="WARNING", note=f"田中さん {PHONE}")
    assert entry is not None and PHONE not in json.dumps(entry, ensure_ascii=False)
    assert masked[0] == {"note": f"田中さん {PHONE}"} and "claim_superseded" in capsys.readouterr().err


def test_fields_that_already_are_json_are_masked_as_they_are_and_the_rest_as_their_text(json_logs, capsys):
    # GIVEN fields that are JSON's own, and ones that are not (a tuple, a set, a number key, NaN)
    entry = logs.log_event(
        "mixed",
        layer="brain",
        plain={"to": EMAIL, "n": [1, 2.5, None, True]},
        pair=(PHONE, 2),
        nan=float("nan"),
    )
    # THEN both are masked, the tuple became a list, and the line is valid JSON
    assert entry is not None
    assert entry["plain"]["n"] == [1, 2.5, None, True] and EMAIL not in json.dumps(entry["plain"])
    assert entry["pair"][1] == 2 and PHONE not in entry["pair"][0]
    (line,) = lines(capsys)
    assert line["plain"] == entry["plain"]
