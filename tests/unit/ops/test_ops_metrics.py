"""The seed §15.1 metrics over windows, and which thresholds they cross."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from ops_fakes import make_record

from shared_lib.ops.metrics import Thresholds, breaches, percentile, series, window_stats

T0 = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
FEW = Thresholds(min_turns=1, min_tool_calls=1, min_llm_calls=1)


def tool_result(ok: bool) -> dict:
    return {"tool_name": "chatwork_task_create", "call_index": 0, "ok": ok, "error_code": None if ok else "x"}


def test_a_window_counts_turns_rates_latency_cost_and_cache_hits():
    # GIVEN four turns: one confirmed, one blocked, one with a failed tool, one shadow-less plain reply
    rows = [
        make_record(T0, guardian_action="confirm", output_type="tool_call"),
        make_record(T0 + timedelta(minutes=1), guardian_action="block", llm_confidence=0.2),
        make_record(
            T0 + timedelta(minutes=2),
            tool_calls_executed=2,
            tool_errors=1,
            execution_result=[tool_result(True), tool_result(False)],
        ),
        make_record(
            T0 + timedelta(minutes=3),
            usage={
                "llm_calls": 2,
                "llm_duration_ms": 30_000,
                "cost_usd": 0.02,
                "input_tokens": 100,
                "cache_read_input_tokens": 300,
            },
            cost_usd=0.02,
        ),
    ]
    shadow = [make_record(T0, shadow=True, kind="shadow_candidate", cost_usd=0.5)]
    # WHEN the hour is summarised
    s = window_stats(rows, T0, T0 + timedelta(hours=1), shadow)
    # THEN every seed metric is there
    assert s.turns == 4 and s.confirmations == 1 and s.blocks == 1
    assert s.confirmation_rate == 0.25 and s.block_rate == 0.25
    assert s.tool_calls == 2 and s.tool_errors == 1 and s.tool_error_rate == 0.5
    assert s.llm_calls == 5 and s.llm_latency_ms_p95 == 15_000 and s.llm_latency_ms_mean == 6_480
    assert s.cost_usd == 0.55 and s.shadow_cost_usd == 0.5
    assert s.cache_hit_ratio == round(600 / 1000, 4) and s.avg_response_ms == 1000
    assert s.mean_confidence == round((0.9 * 3 + 0.2) / 4, 3)


def test_records_outside_the_window_do_not_count():
    rows = [make_record(T0 - timedelta(seconds=1)), make_record(T0), make_record(T0 + timedelta(hours=1))]
    assert window_stats(rows, T0, T0 + timedelta(hours=1)).turns == 1


def test_an_empty_window_has_no_rates_rather_than_zero_rates():
    s = window_stats([], T0, T0 + timedelta(hours=1))
    assert s.turns == 0 and s.block_rate is None and s.llm_latency_ms_p95 is None and s.cost_usd == 0


def test_series_cuts_consecutive_windows():
    rows = [make_record(T0 + timedelta(minutes=m)) for m in (5, 65, 70, 170)]
    out = series(rows, T0, T0 + timedelta(hours=3), timedelta(hours=1))
    assert [s.turns for s in out] == [1, 2, 1] and out[-1].end == T0 + timedelta(hours=3)


def test_percentile_is_nearest_rank():
    assert percentile([], 95) is None
    assert percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 95) == 10 and percentile([5, 1, 3], 50) == 3


def test_each_seed_threshold_crossed_is_a_breach():
    # GIVEN a window over every threshold (latency 12 s, 10 % tool errors, 50 % confirm, 50 % block)
    rows = [
        make_record(
            T0,
            guardian_action="block",
            usage={"llm_calls": 1, "llm_duration_ms": 12_000},
            tool_calls_executed=10,
            tool_errors=1,
        ),
        make_record(
            T0,
            guardian_action="confirm",
            output_type="tool_call",
            usage={"llm_calls": 1, "llm_duration_ms": 12_000},
        ),
    ]
    s = window_stats(rows, T0, T0 + timedelta(hours=1))
    # WHEN checked, with today's cost over the budget
    found = {b.metric: b for b in breaches(s, FEW, daily_cost=40.0)}
    # THEN each crossing is reported with the seed's severity
    assert set(found) == {"llm_latency", "tool_error_rate", "confirmation_rate", "block_rate", "daily_cost"}
    assert found["confirmation_rate"].severity == "info" and found["block_rate"].severity == "warning"


def test_a_text_reply_the_guardian_marks_confirm_is_not_a_confirmation():
    # GIVEN two turns the guardian marked CONFIRM: a tool call (the user was asked) and a text
    # reply (the text was sent, nobody was asked), and a clarification marked CONFIRM too
    rows = [
        make_record(T0, guardian_action="confirm", output_type="tool_call"),
        make_record(T0, guardian_action="confirm", output_type="text_response"),
        make_record(T0, guardian_action="confirm", output_type="clarification_needed"),
        make_record(T0, guardian_action="allow", output_type="tool_call"),
    ]
    # WHEN the window is summarised
    s = window_stats(rows, T0, T0 + timedelta(hours=1))
    # THEN only the tool call's confirmation counts, over all four turns
    assert s.confirmations == 1 and s.confirmation_rate == 0.25
    assert [b.metric for b in breaches(s, FEW)] == []


def test_rates_need_enough_samples():
    rows = [make_record(T0, guardian_action="block")]
    s = window_stats(rows, T0, T0 + timedelta(hours=1))
    assert breaches(s, Thresholds()) == [] and [b.metric for b in breaches(s, FEW)] == ["block_rate"]
