"""The rollback guard counts what the brain caused, never waiting, and never overwrites an
operator's choice (issue 33): a backlog (turns that waited, a budget spent before the brain
started, a call never made) is counted apart and trips nothing; an operator's override stands
through a trip, and the guard alerts instead."""

from __future__ import annotations

from datetime import timedelta

import pytest
from rollout_fakes import ORG, guard_record, make_runtime

from shared_lib.flags import OVERRIDE_DOC, RollbackGuardConfig
from shared_lib.rollout.causes import error_cause, record_signals
from shared_lib.rollout.guard import ALERT_CODE, AUTHOR, HELD_CODE, RollbackGuard, guard_status
from shared_lib.rollout.overrides import write_org_override, write_override

# (an error row of a record, who caused it): the guard's classification of errors
ERRORS = [
    # the brain's own calls: failed, timed out while the brain waited on the LLM, no valid proposal
    ({"code": "api_timeout", "message": "Request timed out."}, "brain"),
    ({"code": "api_timeout", "message": "turn budget spent between attempts"}, "brain"),
    ({"code": "llm_unavailable", "message": "Error code: 529 - overloaded"}, "brain"),
    ({"code": "rate_limit", "message": "Error code: 429"}, "brain"),
    ({"code": "parse_error", "message": "no valid proposal after the retry"}, "brain"),
    # waiting: the budget was gone before the brain started, or before a call was made
    ({"code": "turn_backlog", "message": "the turn's budget was spent before the brain started"}, "system"),
    ({"code": "api_timeout", "message": "turn budget spent before the call"}, "system"),
    ({"code": "api_timeout", "message": "integration: turn budget spent (phrasing call not made)"}, "system"),
    # neither an LLM failure nor waiting: judged elsewhere (tool results) or not the brain's
    ({"code": "invalid_tool_call", "message": "retried with guidance"}, "user"),
    ({"code": "memory_access_error", "message": "vault: Unavailable"}, "user"),
    ({"code": "send_error", "message": "status 503"}, "user"),
]


@pytest.mark.parametrize(("error", "cause"), ERRORS, ids=[f"{e['code']}:{c}" for e, c in ERRORS])
def test_given_an_error_row_when_classified_then_its_cause_is_the_expected_one(error, cause):
    assert error_cause(error) == cause


@pytest.mark.parametrize(
    ("fields", "llm_errors", "infra_waits"),
    [
        ({"errors": [{"code": "api_timeout", "message": "Request timed out."}]}, 1, 0),
        ({"errors": [{"code": "turn_backlog", "message": "spent before the brain started"}]}, 0, 1),
        ({"errors": [{"code": "api_timeout", "message": "turn budget spent before the call"}]}, 0, 1),
        # a turn that waited in a backlog and was then answered normally
        ({"backlogged": True, "queued_ms": 600_000.0}, 0, 1),
        # it waited, and then the brain's own call failed: that failure is still the brain's
        ({"backlogged": True, "errors": [{"code": "llm_unavailable", "message": "529"}]}, 1, 1),
        ({}, 0, 0),
    ],
)
def test_given_a_record_when_counted_then_waiting_is_left_out_of_the_llm_errors(
    fields, llm_errors, infra_waits
):
    counts = record_signals({**guard_record(), **fields})
    assert (counts["llm_errors"], counts["infra_waits"]) == (llm_errors, infra_waits)


@pytest.fixture
def rt(tmp_path, wall_clock):
    return make_runtime(tmp_path, clock=wall_clock, brain_mode="canary", canary_percent=100)


def guard() -> RollbackGuard:
    return RollbackGuard(RollbackGuardConfig(), evaluate_every_seconds=0)


def failing(n: int) -> list[dict]:
    return [guard_record(errors=("llm_unavailable",)) for _ in range(n)]


def test_given_a_backlog_when_every_turn_waited_or_could_not_start_then_nothing_trips(rt):
    # GIVEN CPU starvation: 40 turns, half answered after a long wait, half whose budget was gone
    # before the brain started (what used to be 「もう一度言って」 and an LLM error each)
    g = guard()
    late = [guard_record(backlogged=True, queued_ms=300_000.0) for _ in range(20)]
    gone = [
        {**guard_record(), "errors": [{"code": "turn_backlog", "message": "spent before the brain started"}]}
        for _ in range(20)
    ]
    # WHEN the guard sees them
    alerts = [a for r in late + gone for a in g.observe(rt, r)]
    # THEN nothing tripped, no override was written, and the waits are shown as left out
    assert alerts == [] and rt.store.get(OVERRIDE_DOC) is None
    status = guard_status(rt)
    assert status["orgs"][ORG]["excluded"]["infra_waits"] == 40
    assert status["orgs"][ORG]["totals"]["llm_errors"] == 0 and status["orgs"][ORG]["tripped"] == []


def test_given_an_operators_override_when_the_guard_trips_then_it_stands_and_the_guard_alerts(rt):
    # GIVEN an operator who put everyone on the LLM arm for a day, on purpose
    write_override(
        rt.store,
        brain_mode="llm",
        ttl=timedelta(hours=24),
        author="sato",
        reason="INC-77: verifying the fix on the LLM arm",
        now=rt.clock(),
    )
    before = rt.store.get(OVERRIDE_DOC)
    g = guard()
    # WHEN the brain really fails 20 turns in a row (a trip: 100 % > 5 %)
    alerts = [a for r in failing(20) for a in g.observe(rt, r)]
    # THEN the operator's override is untouched: no legacy, no organisation rolled back
    assert rt.store.get(OVERRIDE_DOC) == before
    section, _ = rt.flags.evaluate(ORG, "u1", rt.clock())
    assert (section.arm, section.reason) == ("llm", "OVERRIDE")
    # AND one alert says what the guard would have done, whose override stands, with the figures
    assert [a["code"] for a in alerts] == [HELD_CODE]
    message = alerts[0]["message"]
    assert "sato" in message and "llm_error_rate 1.000 (20/20)" in message and ALERT_CODE not in message
    # AND the same failures going on do not alert again within the window
    assert [a for r in failing(5) for a in g.observe(rt, r)] == []


def test_given_an_operators_override_when_one_organisation_trips_then_no_organisation_rollback_is_added(
    tmp_path, wall_clock
):
    # GIVEN three organisations and an operator's override of the arm for all of them
    rt = make_runtime(
        tmp_path, clock=wall_clock, orgs=("acme", "beta", "gamma"), brain_mode="canary", canary_percent=100
    )
    write_override(
        rt.store,
        brain_mode="canary",
        ttl=timedelta(hours=6),
        author="ops",
        reason="canary drill",
        now=rt.clock(),
    )
    g = guard()
    healthy = [guard_record(org=org) for org in ("beta", "gamma") for _ in range(20)]
    # WHEN acme's brain fails 20 turns (an organisation-level trip)
    alerts = [
        a
        for r in healthy + [guard_record(org="acme", errors=("parse_error",)) for _ in range(20)]
        for a in g.observe(rt, r)
    ]
    # THEN acme is not rolled back over the operator's choice, and the operator is told
    assert rt.store.get(OVERRIDE_DOC).get("orgs", {}) == {}
    assert [a["code"] for a in alerts] == [HELD_CODE] and "acme" in alerts[0]["message"]


def test_given_no_operator_override_when_the_brain_fails_then_the_guard_still_rolls_back(rt):
    # GIVEN an override of the guard's own making for another organisation (not an operator's)
    write_org_override(rt.store, "other", ttl=timedelta(hours=1), author=AUTHOR, reason="earlier trip")
    g = guard()
    # WHEN the brain fails 20 turns
    alerts = [a for r in failing(20) for a in g.observe(rt, r)]
    # THEN it rolls back as before (the protection is for operators' choices only)
    assert [a["code"] for a in alerts] == [ALERT_CODE]
    section, _ = rt.flags.evaluate(ORG, "u1", rt.clock())
    assert section.arm == "legacy"
