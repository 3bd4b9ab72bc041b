"""The rollback guard: each threshold trips it, it writes the legacy override with its reason
and alerts, and the LLM arm recovers when the override expires."""

from __future__ import annotations

from datetime import timedelta

import pytest
from rollout_fakes import ORG, make_runtime, send

from shared_lib.flags import OVERRIDE_DOC, RollbackGuardConfig
from shared_lib.rollout.guard import ALERT_CODE, AUTHOR, RollbackGuard, guard_status
from shared_lib.rollout.overrides import write_override

_ids = iter(range(10**9))


def llm_record(
    *,
    tools: int = 0,
    failed: int = 0,
    code: str = "execution_error",
    block: bool = False,
    llm_ms: float = 800.0,
    calls: int = 1,
    cost: float = 0.001,
    **extra,
) -> dict:
    results = [
        {"tool_name": "t", "ok": i >= failed, "error_code": code if i < failed else None, "dry_run": False}
        for i in range(tools)
    ]
    return {
        "turn_id": f"T{next(_ids)}",
        "flags_arm": "llm",
        "arm": "llm",
        "execution_result": results,
        "guardian_action": "block" if block else "allow",
        "usage": {"llm_calls": calls},
        "llm_duration_ms": llm_ms,
        "cost_usd": cost,
        **extra,
    }


@pytest.fixture
def rt(tmp_path, wall_clock):
    return make_runtime(tmp_path, clock=wall_clock, brain_mode="canary", canary_percent=100)


def guard(**config) -> RollbackGuard:
    return RollbackGuard(RollbackGuardConfig(**config), evaluate_every_seconds=0)


def observe_all(g: RollbackGuard, rt, records) -> list[dict]:
    alerts = []
    for r in records:
        alerts += g.observe(rt, r)
    return alerts


def arm_of(rt, user: str = "u1") -> tuple[str, str]:
    section, _ = rt.flags.evaluate(ORG, user, rt.clock())
    return section.arm, section.reason


def test_given_a_tool_error_rate_over_5_percent_when_enough_calls_are_seen_then_it_rolls_back(rt):
    # GIVEN the LLM arm serves everyone
    g = guard()
    assert arm_of(rt) == ("llm", "SPLIT")
    # WHEN 19 tool calls are seen, 2 of them failing: too few samples to judge
    assert (
        observe_all(
            g,
            rt,
            [llm_record(tools=1, failed=1) for _ in range(2)] + [llm_record(tools=1) for _ in range(17)],
        )
        == []
    )
    # AND the 20th arrives (10 % > 5 %)
    alerts = g.observe(rt, llm_record(tools=1))
    # THEN one alert, and the override back to legacy with its reason, author and expiry
    assert [a["code"] for a in alerts] == [ALERT_CODE]
    override = rt.store.get(OVERRIDE_DOC)
    assert override["brain_mode"] == "legacy" and override["author"] == AUTHOR
    assert "tool_error_rate 0.100 (2/20) > 0.05" in override["reason"]
    assert override["expires_at"] == rt.clock() + timedelta(minutes=120)
    assert arm_of(rt) == ("legacy", "OVERRIDE")
    assert rt.store.get(f"alerts/{alerts[0]['event_id']}")["code"] == ALERT_CODE


def test_given_failures_that_are_user_input_errors_when_counted_then_they_are_not_execution_errors(rt):
    g = guard()
    records = [llm_record(tools=1, failed=1, code="validation_error") for _ in range(25)]
    assert observe_all(g, rt, records) == []
    assert guard_status(rt)["totals"]["tool_errors"] == 0


def test_given_a_block_rate_over_10_percent_when_20_turns_are_seen_then_it_rolls_back(rt):
    g = guard()
    alerts = observe_all(g, rt, [llm_record(block=i < 3) for i in range(20)])
    assert len(alerts) == 1 and "block_rate 0.150 (3/20) > 0.1" in rt.store.get(OVERRIDE_DOC)["reason"]


def test_given_llm_latency_over_10_seconds_when_10_calls_are_seen_then_it_rolls_back(rt):
    g = guard()
    alerts = observe_all(g, rt, [llm_record(llm_ms=12_000) for _ in range(10)])
    assert (
        len(alerts) == 1
        and "llm_latency_ms 12000 (mean of 10 calls) > 10000" in rt.store.get(OVERRIDE_DOC)["reason"]
    )


def test_given_the_daily_budget_when_the_days_cost_exceeds_it_then_it_rolls_back_at_once(rt):
    g = guard(daily_cost_budget_usd=1.0)
    assert observe_all(g, rt, [llm_record(cost=0.6)]) == []
    alerts = g.observe(rt, llm_record(cost=0.6))
    assert len(alerts) == 1 and "daily_cost_usd 1.20 > 1" in rt.store.get(OVERRIDE_DOC)["reason"]


def test_given_shadow_candidates_when_observed_then_they_count_toward_cost_only(rt):
    g = guard(daily_cost_budget_usd=1.0)
    candidates = [llm_record(block=True, cost=0.3, flags_arm="legacy", shadow=True) for _ in range(20)]
    alerts = observe_all(g, rt, candidates)
    status = guard_status(rt)
    assert status["totals"]["turns"] == 0 and status["day_cost_usd"] == pytest.approx(6.0)
    assert len(alerts) == 1 and "daily_cost_usd" in rt.store.get(OVERRIDE_DOC)["reason"]


def test_given_a_redelivered_record_when_observed_twice_then_it_counts_once(rt):
    g = guard()
    record = llm_record(tools=2, failed=1)
    g.observe(rt, record)
    g.observe(rt, record)
    assert guard_status(rt)["totals"]["tool_calls"] == 2


def test_given_legacy_served_records_when_observed_then_the_guard_ignores_them(rt):
    g = guard()
    legacy = [llm_record(block=True, flags_arm="legacy", arm="legacy") for _ in range(30)]
    assert observe_all(g, rt, legacy) == []
    assert guard_status(rt)["totals"]["turns"] == 0


def test_given_an_operator_already_stopped_the_llm_arm_when_thresholds_cross_then_no_second_override(rt):
    write_override(
        rt.store, kill_switch=True, ttl=timedelta(hours=1), author="kazu", reason="incident", now=rt.clock()
    )
    assert observe_all(guard(), rt, [llm_record(block=True) for _ in range(20)]) == []
    assert rt.store.get(OVERRIDE_DOC)["author"] == "kazu"


def test_given_a_trip_when_the_override_expires_then_the_llm_arm_serves_again_on_a_fresh_window(
    rt, wall_clock
):
    # GIVEN a guard whose override lasts 5 minutes over a 15-minute window, and a trip
    g = guard(override_ttl_minutes=5, window_minutes=15)
    assert len(observe_all(g, rt, [llm_record(block=True) for _ in range(20)])) == 1
    assert arm_of(rt) == ("legacy", "OVERRIDE")
    # WHEN the override expires (the blocks are still inside the 15-minute window)
    wall_clock.advance(minutes=6)
    # THEN the LLM arm serves again
    assert arm_of(rt) == ("llm", "SPLIT")
    # AND healthy traffic does not re-trip on the old blocks: the window restarted at the trip
    assert observe_all(g, rt, [llm_record() for _ in range(20)]) == []
    assert guard_status(rt)["totals"]["blocks"] == 0
    # AND a new bad run trips again
    assert len(observe_all(g, rt, [llm_record(block=True) for _ in range(20)])) == 1


def test_given_the_guard_disabled_in_the_flags_when_thresholds_cross_then_nothing_happens(rt):
    assert observe_all(guard(enabled=False), rt, [llm_record(block=True) for _ in range(30)]) == []
    assert rt.store.get(OVERRIDE_DOC) is None


def test_given_a_throttle_when_records_arrive_quickly_then_the_window_is_read_at_most_once_per_interval(
    rt, ticker
):
    g = RollbackGuard(RollbackGuardConfig(), evaluate_every_seconds=10, monotonic=ticker)
    assert g.observe(rt, llm_record(block=True)) == []  # first record: evaluated, too few turns
    assert observe_all(g, rt, [llm_record(block=True) for _ in range(25)]) == []  # counted, not evaluated
    ticker.advance(10)
    assert len(g.observe(rt, llm_record(block=True))) == 1


def test_given_blocked_llm_turns_through_the_pipeline_when_the_observer_records_them_then_it_trips_and_recovers(
    tmp_path, scripted_llm, wall_clock
):
    # GIVEN the LLM arm serving everyone (canary 100 %) through the in-process pipeline
    rt = make_runtime(tmp_path, llm=scripted_llm, clock=wall_clock, brain_mode="canary", canary_percent=100)
    rt.rollback_guard = RollbackGuard(evaluate_every_seconds=0)  # thresholds from the flags document
    # WHEN 20 turns ask for something the guardian blocks (the observer feeds the guard)
    for i in range(20):
        send(rt, "山田さんの権限をレベル6に変更して", room=f"r{i}")
    # THEN the guard rolled the LLM arm back, and the next turn is served by legacy
    assert rt.store.get(OVERRIDE_DOC)["author"] == AUTHOR
    turn_id = send(rt, "おはよう", room="after-trip")
    record = rt.store.get(f"orgs/{ORG}/observability/{turn_id}")
    assert (record["flags_arm"], record["flags_reason"]) == ("legacy", "OVERRIDE")
    assert [a["code"] for _, a in rt.store.query("alerts") if a.get("code") == ALERT_CODE] == [ALERT_CODE]
    # WHEN the override expires
    wall_clock.advance(minutes=121)
    turn_id = send(rt, "おはよう", room="recovered")
    # THEN the LLM arm serves again
    record = rt.store.get(f"orgs/{ORG}/observability/{turn_id}")
    assert (record["flags_arm"], record["flags_reason"]) == ("llm", "SPLIT")
