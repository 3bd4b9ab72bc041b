"""The rollback guard per organisation: counters per organisation, a trip that rolls back one
organisation only, the global threshold (a count, a share, the pooled small organisations,
the day's cost), the trip document and its alert, and shadow disagreement."""

from __future__ import annotations

from datetime import timedelta

import pytest
from rollout_fakes import guard_record, make_runtime

from shared_lib import collections
from shared_lib.flags import OVERRIDE_DOC, RollbackGuardConfig
from shared_lib.rollout.guard import ALERT_CODE, AUTHOR, STATE, TRIPS, RollbackGuard, guard_status

ORGS = ("acme", "beta", "gamma", "delta", "eps")


@pytest.fixture
def rt(tmp_path, wall_clock):
    return make_runtime(tmp_path, clock=wall_clock, orgs=ORGS, brain_mode="canary", canary_percent=100)


def guard(**config) -> RollbackGuard:
    return RollbackGuard(RollbackGuardConfig(**config), evaluate_every_seconds=0)


def observe_all(g: RollbackGuard, rt, records) -> list[dict]:
    alerts = []
    for r in records:
        alerts += g.observe(rt, r)
    return alerts


def healthy(org: str, n: int = 20) -> list[dict]:
    return [guard_record(org=org) for _ in range(n)]


def failing(org: str, errors: int, n: int = 20) -> list[dict]:
    """``n`` turns of ``org``, the first ``errors`` of them failing in the LLM."""
    return [guard_record(org=org, errors=("llm_unavailable",) if i < errors else ()) for i in range(n)]


def arm_of(rt, org: str, user: str = "u1") -> tuple[str, str]:
    section, _ = rt.flags.evaluate(org, user, rt.clock())
    return section.arm, section.reason


def test_given_records_of_two_organisations_when_counted_then_each_has_its_own_counters(rt):
    g = guard()
    observe_all(g, rt, failing("acme", 3, n=5) + healthy("beta", 7))
    orgs = guard_status(rt)["orgs"]
    assert (orgs["acme"]["totals"]["turns"], orgs["acme"]["totals"]["llm_errors"]) == (5, 3)
    assert (orgs["beta"]["totals"]["turns"], orgs["beta"]["totals"]["llm_errors"]) == (7, 0)


def test_given_a_regression_in_one_organisation_when_it_trips_then_only_that_organisation_goes_back_to_legacy(
    rt,
):
    # GIVEN three active organisations, beta and gamma healthy
    g = guard()
    assert observe_all(g, rt, healthy("beta") + healthy("gamma")) == []
    # WHEN acme's LLM fails on 2 of 20 turns (10 % > 5 %)
    alerts = observe_all(g, rt, failing("acme", 2))
    # THEN one alert, and an override for acme only: legacy, by the guard, with its figures and expiry
    assert [a["code"] for a in alerts] == [ALERT_CODE]
    override = rt.store.get(OVERRIDE_DOC)
    assert override.get("brain_mode") is None and override.get("kill_switch") is None
    assert set(override["orgs"]) == {"acme"}
    acme = override["orgs"]["acme"]
    assert (acme["brain_mode"], acme["author"]) == ("legacy", AUTHOR)
    assert "llm_error_rate 0.100 (2/20) > 0.05" in acme["reason"]
    assert acme["expires_at"] == rt.clock() + timedelta(minutes=120)
    # AND acme is served legacy while beta and gamma keep the LLM arm
    assert arm_of(rt, "acme") == ("legacy", "ORG_OVERRIDE")
    assert arm_of(rt, "beta") == ("llm", "SPLIT") and arm_of(rt, "gamma") == ("llm", "SPLIT")


def test_given_an_organisation_trip_when_recorded_then_the_trip_document_and_the_alert_say_why(rt):
    g = guard()
    observe_all(g, rt, healthy("beta") + healthy("gamma"))
    (alert,) = observe_all(g, rt, failing("acme", 2))
    ((trip_path, trip),) = [(f"{TRIPS}/{doc_id}", doc) for doc_id, doc in rt.store.query(TRIPS)]
    assert collections.of_path(trip_path).name == "rollout_guard_trips"
    # THEN the document holds the window, the counts per signal, the thresholds, the decision, the orgs
    assert (trip["decision"], trip["orgs"], trip["rolled_back"]) == ("org", ["acme"], ["acme"])
    assert trip["window_minutes"] == 15 and trip["window_start"] == guard_status(rt)["window_start"]
    assert (
        trip["counts"]["acme"]["totals"]["llm_errors"] == 2
        and trip["counts"]["acme"]["totals"]["turns"] == 20
    )
    assert trip["thresholds"]["llm_error_rate_max"] == 0.05 and trip["thresholds"]["global_trip_orgs"] == 3
    assert "1 of 3 active organisations" in trip["why"]
    assert trip["trip_id"] in rt.store.get(OVERRIDE_DOC)["orgs"]["acme"]["reason"]
    # AND the alert says it: whom, until when, the decision, the figures
    message = rt.store.get(f"alerts/{alert['event_id']}")["message"]
    assert trip["trip_id"] in message and "brain_mode legacy for acme" in message
    assert (
        "org: 1 of 3 active organisations" in message
        and "acme: llm_error_rate 0.100 (2/20) > 0.05" in message
    )
    # AND the state remembers acme's trip (its window restarts there), not a global one
    state = rt.store.get(STATE)
    assert state["orgs"]["acme"]["trip_id"] == trip["trip_id"] and "last_trip_at" not in state


def test_given_user_caused_blocks_in_one_organisation_when_another_regresses_then_only_the_regression_trips(
    rt,
):
    g = guard()
    user_blocks = [guard_record(org="gamma", block="danger.blocked_operation") for _ in range(20)]
    alerts = observe_all(g, rt, user_blocks + healthy("beta") + failing("acme", 4))
    assert len(alerts) == 1
    assert set(rt.store.get(OVERRIDE_DOC)["orgs"]) == {"acme"}
    assert arm_of(rt, "gamma") == ("llm", "SPLIT")
    assert guard_status(rt)["orgs"]["gamma"]["excluded"]["user_blocks"] == 20


def test_given_a_rolled_back_organisation_when_new_traffic_comes_then_its_window_restarted_and_the_others_did_not(
    rt, wall_clock
):
    g = guard()
    observe_all(g, rt, failing("beta", 1, n=10) + healthy("gamma"))  # beta: 1 error in 10, too few turns
    observe_all(g, rt, failing("acme", 2))
    wall_clock.advance(minutes=1)
    status = guard_status(rt)
    assert status["orgs"].get("acme") is None  # nothing counted since its trip
    assert status["orgs"]["beta"]["totals"]["llm_errors"] == 1  # beta's window goes on
    assert status["tripped_earlier"] == ["acme"]


def test_given_a_third_organisation_tripping_within_the_window_when_evaluated_then_everyone_goes_back(
    rt, wall_clock
):
    # GIVEN five active organisations; acme and beta already rolled back alone
    g = guard()
    observe_all(g, rt, healthy("delta") + healthy("eps"))
    observe_all(g, rt, failing("acme", 2))
    wall_clock.advance(minutes=2)
    observe_all(g, rt, failing("beta", 2))
    assert set(rt.store.get(OVERRIDE_DOC)["orgs"]) == {"acme", "beta"}
    assert rt.store.get(OVERRIDE_DOC).get("brain_mode") is None
    # WHEN a third organisation trips within the same window
    wall_clock.advance(minutes=2)
    (alert,) = observe_all(g, rt, failing("gamma", 2))
    # THEN the global override rolls everyone back, the organisations' own rollbacks kept
    override = rt.store.get(OVERRIDE_DOC)
    assert (override["brain_mode"], override["author"]) == ("legacy", AUTHOR)
    assert (
        "3 of 5 active organisations" in override["reason"] and "gamma: llm_error_rate" in override["reason"]
    )
    assert set(override["orgs"]) == {"acme", "beta"}
    assert arm_of(rt, "delta") == ("legacy", "OVERRIDE")
    trips = sorted((doc for _, doc in rt.store.query(TRIPS)), key=lambda t: t["at"])
    assert [t["decision"] for t in trips] == ["org", "org", "global"]
    assert trips[-1]["orgs"] == ["acme", "beta", "gamma"] and trips[-1]["rolled_back"] == ["*"]
    assert (
        "brain_mode legacy for every organisation" in rt.store.get(f"alerts/{alert['event_id']}")["message"]
    )


def test_given_an_organisation_trip_older_than_the_window_when_another_trips_then_it_is_not_counted(
    rt, wall_clock
):
    g = guard(global_trip_orgs=2)
    observe_all(g, rt, healthy("delta") + healthy("eps"))
    observe_all(g, rt, failing("acme", 2))
    wall_clock.advance(minutes=16)  # acme's trip leaves the 15-minute window
    observe_all(g, rt, healthy("delta") + healthy("eps"))
    observe_all(g, rt, failing("beta", 2))
    override = rt.store.get(OVERRIDE_DOC)
    assert override.get("brain_mode") is None and set(override["orgs"]) == {"acme", "beta"}


def test_given_a_share_threshold_when_half_the_active_organisations_trip_then_it_is_global(rt):
    g = guard(global_trip_share=0.5)
    observe_all(g, rt, healthy("beta"))
    assert len(observe_all(g, rt, failing("acme", 2))) == 1
    assert rt.store.get(OVERRIDE_DOC)["brain_mode"] == "legacy"
    assert arm_of(rt, "beta") == ("legacy", "OVERRIDE")


def test_given_many_small_organisations_when_together_they_cross_a_threshold_then_the_pool_trips_globally(rt):
    # GIVEN five organisations of 10 turns each (too few to judge alone), 2 LLM errors in each
    g = guard()
    alerts = observe_all(g, rt, [r for org in ORGS for r in failing(org, 2, n=10)])
    # THEN the pool (50 turns, 10 errors) trips, and it cannot be pinned on one: global
    assert len(alerts) == 1
    override = rt.store.get(OVERRIDE_DOC)
    assert (
        override["brain_mode"] == "legacy" and "(small organisations): llm_error_rate" in override["reason"]
    )


def test_given_the_days_cost_over_budget_when_evaluated_then_it_is_global(rt):
    g = guard(daily_cost_budget_usd=1.0)
    observe_all(g, rt, [*healthy("beta", 1), guard_record(org="acme", cost=1.5)])
    override = rt.store.get(OVERRIDE_DOC)
    assert override["brain_mode"] == "legacy" and "daily_cost_usd 1.50 > 1" in override["reason"]


def test_given_an_organisation_already_rolled_back_when_it_trips_again_then_nothing_new_is_written(rt):
    g = guard()
    observe_all(g, rt, healthy("beta") + healthy("gamma"))
    assert len(observe_all(g, rt, failing("acme", 2))) == 1
    # a second observer instance, that did not see the first trip, evaluates the same old events
    rt.store.delete(STATE)
    assert observe_all(guard(), rt, [guard_record(org="beta")]) == []
    assert len(list(rt.store.query(TRIPS))) == 1


def comparison(org: str, n: int, *, agree: bool | None) -> dict:
    # agreeing still differs in wording (parameters); disagreeing is another decision (intent, tool)
    mismatches = [] if agree is None else (["parameters"] if agree else ["intent", "tool", "parameters"])
    return {
        "turn_id": f"C-{org}-{n}",
        "org_id": org,
        "candidate_arm": "llm",
        "all_agree": False if agree is not None else None,
        "mismatches": mismatches,
    }


def legacy_served(org: str, n: int) -> dict:
    return {"turn_id": f"C-{org}-{n}", "org_id": org, "flags_arm": "legacy", "arm": "legacy"}


def test_given_shadow_disagreement_by_default_then_it_is_counted_but_trips_nothing(rt):
    # GIVEN the default thresholds: disagreement is the promotion gate's evidence, not harm
    g = guard()
    observe_all(g, rt, healthy("beta"))
    # WHEN acme's candidate decides differently on every one of 30 turns
    alerts = [
        a
        for n in range(30)
        for a in g.observe(rt, legacy_served("acme", n), comparison("acme", n, agree=False))
    ]
    # THEN nothing trips (shadow mode keeps collecting), and the disagreement is reported
    assert alerts == [] and rt.store.get(OVERRIDE_DOC) is None
    checks = {c["name"]: c for c in guard_status(rt)["orgs"]["acme"]["checks"]}
    assert (
        checks["shadow_disagreement_rate"]["value"] == 1.0
        and not checks["shadow_disagreement_rate"]["tripped"]
    )


def test_given_shadow_comparisons_when_the_candidate_disagrees_too_often_then_that_organisation_trips(rt):
    # GIVEN acme in shadow: served by legacy, an LLM candidate compared with each turn, and an
    # operator who made disagreement a rollback signal (off by default)
    g = guard(shadow_disagreement_rate_max=0.5)
    observe_all(g, rt, healthy("beta") + healthy("gamma"))
    alerts = []
    for n in range(20):
        c = comparison("acme", n, agree=n >= 12)
        # the comparison reaches the guard with whichever side comes second, maybe twice
        alerts += g.observe(rt, legacy_served("acme", n), c)
        alerts += g.observe(rt, legacy_served("acme", n), c)
    # THEN each comparison counted once, and 12 of 20 disagreements (60 % > 50 %) trip acme alone
    assert len(alerts) == 1
    assert (
        "shadow_disagreement_rate 0.600 (12/20) > 0.5" in rt.store.get(OVERRIDE_DOC)["orgs"]["acme"]["reason"]
    )


def test_given_a_failed_candidate_when_its_comparison_is_observed_then_it_carries_no_agreement_to_count(rt):
    g = guard()
    observe_all(g, rt, healthy("beta"))
    g.observe(rt, legacy_served("acme", 1), comparison("acme", 1, agree=None))
    assert "acme" not in guard_status(rt)["orgs"]


def test_given_one_regressing_organisation_still_small_when_pooled_with_healthy_ones_then_it_trips_alone_later(
    rt,
):
    # GIVEN beta and gamma, small and healthy, and acme's first 10 turns, 3 of them failing
    g = guard()
    observe_all(g, rt, healthy("beta", 10) + healthy("gamma", 10) + failing("acme", 3, n=10))
    # THEN the pool crosses the error rate (3/30) but from one organisation only: nothing global
    pool = guard_status(rt)["pool"]
    (check,) = [c for c in pool["checks"] if c["name"] == "llm_error_rate"]
    assert check["value"] == pytest.approx(0.1) and check["from_orgs"] == ["acme"] and not check["tripped"]
    assert rt.store.get(OVERRIDE_DOC) is None
    # WHEN acme reaches 20 turns
    assert len(observe_all(g, rt, healthy("acme", 10))) == 1
    # THEN acme alone is rolled back
    override = rt.store.get(OVERRIDE_DOC)
    assert override.get("brain_mode") is None and set(override["orgs"]) == {"acme"}
