"""The rollback guard with one organisation (every organisation active in the window tripped,
so each trip is global): each threshold trips it, it writes the legacy override with its
reason and alerts, and the LLM arm recovers when the override expires. Per-organisation
trips are in ``test_rollout_guard_orgs``."""

from __future__ import annotations

from datetime import timedelta

import pytest
from rollout_fakes import ORG, FailingLLM, guard_record, make_runtime, send

from shared_lib.flags import OVERRIDE_DOC, RollbackGuardConfig
from shared_lib.rollout.guard import ALERT_CODE, AUTHOR, RollbackGuard, guard_status
from shared_lib.rollout.overrides import write_override

BRAIN_BLOCK = "confidence.too_low"  # a block the brain causes (shared_lib.rollout.causes)


def llm_record(*, block: bool = False, **fields) -> dict:
    """One record of the guard's single organisation; ``block`` is a block the brain caused."""
    return guard_record(block=BRAIN_BLOCK if block else None, **fields)


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


def test_given_one_slow_call_in_ten_when_the_p95_crosses_10_seconds_then_it_rolls_back_though_the_mean_would_not(
    rt,
):
    # GIVEN nine calls of 0.8 s and one of 12 s: the mean (1.9 s) is far below 10 s
    g = guard()
    records = [llm_record(llm_ms=800) for _ in range(9)] + [llm_record(llm_ms=12_000)]
    # WHEN they are observed
    alerts = observe_all(g, rt, records)
    # THEN the p95 (nearest rank: the 10th of 10) is 12 s and the guard rolled back
    assert len(alerts) == 1
    assert (
        "llm_latency_p95_ms 12000 (p95 of 10 turns, 10 calls) > 10000" in rt.store.get(OVERRIDE_DOC)["reason"]
    )


def test_given_one_slow_call_in_twenty_when_observed_then_the_p95_stays_below_the_limit(rt):
    g = guard()
    records = [llm_record(llm_ms=800) for _ in range(19)] + [llm_record(llm_ms=60_000)]
    assert observe_all(g, rt, records) == []
    (check,) = [c for c in guard_status(rt)["orgs"][ORG]["checks"] if c["name"] == "llm_latency_p95_ms"]
    assert check["value"] == 800 and not check["tripped"]


def test_given_a_turn_of_several_calls_when_its_latency_is_counted_then_it_is_per_call(rt):
    g = guard()
    observe_all(g, rt, [llm_record(llm_ms=16_000, calls=2) for _ in range(10)])  # 8 s a call
    (check,) = [c for c in guard_status(rt)["orgs"][ORG]["checks"] if c["name"] == "llm_latency_p95_ms"]
    assert check["value"] == 8_000 and check["enough_samples"] and not check["tripped"]


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


def test_given_a_redelivered_costed_record_when_observed_twice_then_its_cost_counts_once(rt):
    # GIVEN a served turn that cost something (its event and the day's cost are one commit)
    g = guard(daily_cost_budget_usd=100.0)
    record = llm_record(cost=0.6, tools=1)
    # WHEN the observer's delivery comes twice
    g.observe(rt, record)
    g.observe(rt, record)
    # THEN the turn and its cost count once
    status = guard_status(rt)
    assert status["totals"]["turns"] == 1 and status["day_cost_usd"] == pytest.approx(0.6)


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


def test_given_llm_errors_over_5_percent_when_20_turns_are_seen_then_it_rolls_back(rt):
    g = guard()
    alerts = observe_all(g, rt, [llm_record(errors=("llm_unavailable",) if i < 2 else ()) for i in range(20)])
    assert len(alerts) == 1 and "llm_error_rate 0.100 (2/20) > 0.05" in rt.store.get(OVERRIDE_DOC)["reason"]


def test_given_constitution_violations_over_5_percent_when_20_turns_are_seen_then_it_rolls_back(rt):
    g = guard(block_rate_max=1.0)  # the violation's block would trip block_rate too: isolate the signal
    violation = {"code": "constitution.permission_decision", "action": "block", "article": "4.4.2"}
    records = [
        llm_record(constitution_violations=[violation] if i < 2 else [], block=i < 2) for i in range(20)
    ]
    alerts = observe_all(g, rt, records)
    assert len(alerts) == 1
    assert "constitution_violation_rate 0.100 (2/20) > 0.05" in rt.store.get(OVERRIDE_DOC)["reason"]


def test_given_user_caused_blocks_and_denials_when_observed_then_nothing_trips_and_they_show_as_excluded(rt):
    # GIVEN 20 turns the policy blocked (dangerous operation, NG pattern) or the authorizer denied
    g = guard()
    records = (
        [guard_record(block="danger.blocked_operation") for _ in range(10)]
        + [guard_record(block="security.ng_pattern") for _ in range(5)]
        + [guard_record(auth_result="denied", auth_reason="level.insufficient") for _ in range(5)]
    )
    # WHEN the guard counts them
    alerts = observe_all(g, rt, records)
    # THEN nothing trips, and the verdicts are counted apart
    assert alerts == [] and rt.store.get(OVERRIDE_DOC) is None
    group = guard_status(rt)["orgs"][ORG]
    assert group["totals"]["blocks"] == 0 and group["tripped"] == []
    assert (group["excluded"]["user_blocks"], group["excluded"]["denials"]) == (15, 5)


def test_given_user_blocked_turns_through_the_pipeline_when_recorded_then_the_llm_arm_keeps_serving(
    tmp_path, scripted_llm, wall_clock
):
    # GIVEN the LLM arm serving everyone (canary 100 %) through the in-process pipeline
    rt = make_runtime(tmp_path, llm=scripted_llm, clock=wall_clock, brain_mode="canary", canary_percent=100)
    rt.rollback_guard = RollbackGuard(evaluate_every_seconds=0)  # thresholds from the flags document
    # WHEN 20 turns ask for something the policy forbids (a dangerous operation: the user's request)
    for i in range(20):
        send(rt, "山田さんの権限をレベル6に変更して", room=f"r{i}")
    # THEN the guard counted them as user-caused and rolled nothing back
    assert rt.store.get(OVERRIDE_DOC) is None
    assert guard_status(rt)["orgs"][ORG]["excluded"]["user_blocks"] == 20
    turn_id = send(rt, "田中さんにタスクを追加して", room="after")
    record = rt.store.get(f"orgs/{ORG}/observability/{turn_id}")
    assert (record["flags_arm"], record["flags_reason"]) == ("llm", "SPLIT")


def test_given_a_failing_llm_through_the_pipeline_when_the_observer_records_it_then_it_trips_and_recovers(
    tmp_path, wall_clock
):
    # GIVEN the LLM arm serving everyone through the in-process pipeline, and the LLM failing
    llm = FailingLLM()
    rt = make_runtime(tmp_path, llm=llm, clock=wall_clock, brain_mode="canary", canary_percent=100)
    rt.rollback_guard = RollbackGuard(evaluate_every_seconds=0)
    llm.failing = True
    # WHEN 20 turns fail in the LLM (the observer feeds the guard)
    for i in range(20):
        send(rt, "田中さんにタスクを追加して", room=f"r{i}")
    # THEN the guard rolled the LLM arm back, and the next turn is served by legacy
    override = rt.store.get(OVERRIDE_DOC)
    assert override["author"] == AUTHOR and "llm_error_rate 1.000 (20/20) > 0.05" in override["reason"]
    llm.failing = False
    turn_id = send(rt, "田中さんにタスクを追加して", room="after-trip")
    record = rt.store.get(f"orgs/{ORG}/observability/{turn_id}")
    assert (record["flags_arm"], record["flags_reason"]) == ("legacy", "OVERRIDE")
    assert [a["code"] for _, a in rt.store.query("alerts") if a.get("code") == ALERT_CODE] == [ALERT_CODE]
    # WHEN the override expires
    wall_clock.advance(minutes=121)
    turn_id = send(rt, "田中さんにタスクを追加して", room="recovered")
    # THEN the LLM arm serves again
    record = rt.store.get(f"orgs/{ORG}/observability/{turn_id}")
    assert (record["flags_arm"], record["flags_reason"]) == ("llm", "SPLIT")
