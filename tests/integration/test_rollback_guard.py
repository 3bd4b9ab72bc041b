"""The rollback guard on the Firestore emulator: it trips and recovers, concurrent observer
instances count every record exactly once, and a regression in one organisation rolls back
that organisation only while the user-caused blocks of another trip nothing."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

# The same fakes as the unit tests of the rollout (a scripted LLM, clocks, a seeded runtime).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit" / "rollout"))

from rollout_fakes import ORG, FailingLLM, WallClock, make_runtime, send

from shared_lib.flags import OVERRIDE_DOC, RollbackGuardConfig
from shared_lib.rollout.guard import ALERT_CODE, AUTHOR, TRIPS, RollbackGuard, guard_status

pytestmark = pytest.mark.integration


def record(n: int, *, failed: bool = False) -> dict:
    return {
        "turn_id": f"T{n}",
        "org_id": ORG,
        "flags_arm": "llm",
        "arm": "llm",
        "guardian_action": "allow",
        "execution_result": [
            {
                "tool_name": "t",
                "ok": not failed,
                "dry_run": False,
                "error_code": "execution_error" if failed else None,
            }
        ],
        "usage": {"llm_calls": 1},
        "llm_duration_ms": 900.0,
        "cost_usd": 0.002,
    }


def test_given_the_emulator_when_tool_errors_cross_5_percent_then_the_guard_trips_and_the_llm_arm_recovers(
    tmp_path, firestore_store
):
    # GIVEN the LLM arm serving everyone, its state on the emulator
    clock = WallClock()
    rt = make_runtime(tmp_path, store=firestore_store, clock=clock, brain_mode="canary", canary_percent=100)
    guard = RollbackGuard(RollbackGuardConfig(override_ttl_minutes=10), evaluate_every_seconds=0)
    # WHEN 20 tool executions are observed, 2 of them failing
    alerts = [a for n in range(20) for a in guard.observe(rt, record(n, failed=n < 2))]
    # THEN the override to legacy is written with its reason, and one alert raised
    assert [a["code"] for a in alerts] == [ALERT_CODE]
    override = firestore_store.get(OVERRIDE_DOC)
    assert override["author"] == AUTHOR and "tool_error_rate 0.100 (2/20)" in override["reason"]
    assert rt.flags.evaluate(ORG, "u1", clock())[0].reason == "OVERRIDE"
    assert firestore_store.get(f"alerts/{alerts[0]['event_id']}")["code"] == ALERT_CODE
    # WHEN the override expires
    clock.advance(minutes=11)
    # THEN the LLM arm serves again, judged on a fresh window
    section, _ = rt.flags.evaluate(ORG, "u1", clock())
    assert (section.arm, section.reason) == ("llm", "SPLIT")
    assert [a for n in range(20, 45) for a in guard.observe(rt, record(n))] == []
    assert guard_status(rt)["totals"]["tool_errors"] == 0


def test_given_concurrent_observers_when_they_count_then_every_record_counts_once(tmp_path, firestore_store):
    # GIVEN four observer instances (threads) sharing the emulator, each seeing every record twice
    rt = make_runtime(
        tmp_path, store=firestore_store, clock=WallClock(), brain_mode="canary", canary_percent=100
    )
    config = RollbackGuardConfig(min_tool_calls=10_000)  # count only, never trip

    def observer(offset: int) -> None:
        guard = RollbackGuard(config, evaluate_every_seconds=3600)
        for n in range(offset, offset + 10):
            guard.observe(rt, record(n))
            guard.observe(rt, record(n))

    threads = [threading.Thread(target=observer, args=(i * 10,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # THEN the window holds exactly 40 turns and 40 tool calls
    totals = guard_status(rt)["totals"]
    assert (totals["turns"], totals["tool_calls"]) == (40, 40)


def test_given_a_regression_in_one_organisation_on_the_emulator_when_recorded_then_only_it_goes_back_to_legacy(
    tmp_path, firestore_store
):
    # GIVEN the in-process pipeline on the emulator, the LLM arm for everyone in three organisations
    llm = FailingLLM()
    clock = WallClock()
    rt = make_runtime(
        tmp_path,
        llm=llm,
        store=firestore_store,
        clock=clock,
        orgs=("acme", "beta", "gamma"),
        brain_mode="canary",
        canary_percent=100,
    )
    rt.rollback_guard = RollbackGuard(evaluate_every_seconds=0)  # thresholds from the flags document
    # WHEN beta is served normally, gamma's users ask 20 times for what the policy forbids,
    for i in range(20):
        send(rt, "田中さんにタスクを追加して", org="beta", room=f"b{i}")
        send(rt, "山田さんの権限をレベル6に変更して", org="gamma", room=f"g{i}")
    assert firestore_store.get(OVERRIDE_DOC) is None
    # AND the LLM fails for acme's 20 turns (an injected regression)
    llm.failing = True
    for i in range(20):
        send(rt, "田中さんにタスクを追加して", org="acme", room=f"a{i}")
    llm.failing = False
    # THEN acme alone is rolled back: legacy, by the guard, with the figures, until its expiry
    override = firestore_store.get(OVERRIDE_DOC)
    assert override.get("brain_mode") is None and override.get("kill_switch") is None
    assert set(override["orgs"]) == {"acme"}
    acme = override["orgs"]["acme"]
    assert acme["author"] == AUTHOR and "llm_error_rate 1.000 (20/20) > 0.05" in acme["reason"]
    # AND the flags send acme to legacy while beta and gamma keep the LLM arm
    evaluated = {org: rt.flags.evaluate(org, "u1", clock())[0] for org in ("acme", "beta", "gamma")}
    assert (evaluated["acme"].arm, evaluated["acme"].reason) == ("legacy", "ORG_OVERRIDE")
    assert (evaluated["beta"].arm, evaluated["gamma"].arm) == ("llm", "llm")
    served = {org: send(rt, "田中さんにタスクを追加して", org=org, room="after") for org in ("acme", "beta")}
    assert firestore_store.get(f"orgs/acme/observability/{served['acme']}")["flags_reason"] == "ORG_OVERRIDE"
    assert firestore_store.get(f"orgs/beta/observability/{served['beta']}")["flags_arm"] == "llm"
    # AND gamma's 20 blocks were counted as the users' and tripped nothing
    status = guard_status(rt)
    assert status["orgs"]["gamma"]["excluded"]["user_blocks"] == 20
    assert status["orgs"]["gamma"]["totals"]["blocks"] == 0 and status["orgs"]["gamma"]["tripped"] == []
    # AND one trip, recorded with its reasons, and one alert that says it
    ((_, trip),) = firestore_store.query(TRIPS)
    assert (trip["decision"], trip["orgs"]) == ("org", ["acme"])
    assert trip["counts"]["acme"]["totals"]["llm_errors"] == 20
    alerts = [a for _, a in firestore_store.query("alerts") if a.get("code") == ALERT_CODE]
    assert len(alerts) == 1 and "brain_mode legacy for acme" in alerts[0]["message"]
