"""The constitution audit (seed §4.8) and cost against the budget (§14.3, §15.2)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from ops_fakes import ORG, make_record

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.ops.audit import audit, audit_records, findings_for
from shared_lib.ops.cost import cost_report
from shared_lib.ops.metrics import Thresholds
from shared_lib.state import rollups
from shared_lib.telemetry import alerts

T0 = datetime(2026, 11, 23, 3, 0, tzinfo=UTC)  # 12:00 in Tokyo
GOOD = "ユーザーは田中さんに見積書の作成を依頼したいと考えている。担当者と期限が明示されているのでタスク作成ツールが適切である。"


def codes(rec) -> set[str]:
    return {f.code for f in findings_for(rec)}


def test_a_clean_llm_record_has_no_finding():
    assert codes(make_record(T0, llm_reasoning=GOOD)) == set()


def test_the_seed_audit_query_criteria_each_find_the_record():
    assert codes(make_record(T0, llm_reasoning="短い")) == {"reasoning.too_short"}
    assert "reasoning.permission_claim" in codes(
        make_record(T0, llm_reasoning=GOOD + "この人は権限があるので問題ない")
    )
    assert "reasoning.permission_claim" in codes(
        make_record(T0, llm_reasoning=GOOD + "給与データにアクセスできる")
    )
    assert "reasoning.execution_claim" in codes(make_record(T0, llm_reasoning=GOOD + "このまま実行します"))


def test_skipped_checks_are_found_for_every_arm():
    skipped_guardian = make_record(T0, arm="legacy", llm_reasoning="x", guardian_action="none")
    unauthorised = make_record(
        T0,
        llm_reasoning=GOOD,
        auth_result="denied",
        execution_result=[{"tool_name": "announce", "call_index": 0, "ok": True}],
    )
    dry_run = make_record(
        T0,
        llm_reasoning=GOOD,
        auth_result="denied",
        execution_result=[{"tool_name": "announce", "call_index": 0, "ok": True, "dry_run": True}],
    )
    assert codes(skipped_guardian) == {
        "guardian.skipped"
    }  # the legacy brain's fixed reasoning is not audited
    assert codes(unauthorised) == {"authorization.skipped"} and codes(dry_run) == set()


def test_the_audit_over_a_period_counts_findings_and_violation_alerts(rt):
    # GIVEN a day with one clean and one suspicious LLM record, and a violation alert
    now = rt.clock()
    for rec in (
        make_record(now - timedelta(hours=1), llm_reasoning=GOOD),
        make_record(now - timedelta(hours=2), llm_reasoning="実行します"),
    ):
        rt.store.set(f"orgs/{ORG}/observability/{rec.record_id}", rec.store_doc())
    alerts.raise_alert(
        rt, "constitution_violation", "authority_claim", alert_id="v-1", org_id=ORG, turn_id="T"
    )
    # WHEN audited
    rep = audit(rt.store, since=now - timedelta(days=1), until=now + timedelta(seconds=1))
    # THEN both kinds of evidence are reported
    assert not rep.clean and rep.records == 2 and rep.llm_records == 2
    assert rep.counts() == {"reasoning.too_short": 1, "reasoning.execution_claim": 1}
    assert [a["alert_id"] for a in rep.violation_alerts] == ["v-1"]


def test_an_empty_period_is_clean():
    rep = audit_records([], since=T0, until=T0)
    assert rep.clean and rep.as_dict()["counts"] == {}


def test_cost_today_this_month_and_the_projection():
    # GIVEN two turns and a shadow candidate today (Tokyo), one turn on the 1st, and one from last month
    store = MemoryStore()
    rows = [
        make_record(T0, cost_usd=2.0),
        make_record(T0 - timedelta(hours=1), cost_usd=1.0, llm_model="claude-haiku-4-5"),
        make_record(datetime(2026, 10, 31, 16, 0, tzinfo=UTC), cost_usd=3.0),  # Nov 1st 01:00 Tokyo
        make_record(datetime(2026, 10, 30, 12, 0, tzinfo=UTC), cost_usd=100.0),
    ]
    cand = make_record(T0, shadow=True, kind="shadow_candidate", cost_usd=0.5)
    for r in [*rows, cand]:  # counted as the observer counts what it records
        rollups.add(store, r, "Asia/Tokyo")
    th = Thresholds(daily_cost_usd=3.0, timezone="Asia/Tokyo")
    # WHEN the report is made at noon on the 23rd
    rep = cost_report(store, now=T0 + timedelta(minutes=1), th=th)
    # THEN today's cost includes the candidate, the month adds the 1st, and the projection scales it
    assert rep.day == date(2026, 11, 23) and rep.turns == 2
    assert rep.cost_today_usd == 3.5 and rep.shadow_cost_today_usd == 0.5 and rep.over_daily_budget
    assert rep.cost_month_usd == 6.5 and rep.monthly_budget_usd == 90.0
    elapsed = 22 + (12 * 60 + 1) / (24 * 60)
    assert abs(rep.projected_month_usd - 6.5 / elapsed * 30) < 1e-3
    assert rep.by_model == {"claude-haiku-4-5": 1.0, "claude-sonnet-4-5": 2.5}
    assert rep.cache_hit_ratio == 0.5


def test_cost_of_a_past_day_and_one_organisation():
    store = MemoryStore()
    for org, cost in (("a", 1.0), ("b", 2.0)):
        r = make_record(T0 - timedelta(days=1), cost_usd=cost, organization_id=org, org_id=org)
        rollups.add(store, r)
    rep = cost_report(store, now=T0, day=date(2026, 11, 22), org="b", th=Thresholds())
    assert rep.cost_today_usd == 2.0 and rep.turns == 1 and rep.org_id == "b"


def test_the_seed_words_reported_or_deferred_are_listed_but_not_critical():
    # GIVEN reasoning that reports the user's words and leaves the decision to the system
    reported = GOOD + "ユーザーによると閲覧権限があるとのこと。判断はシステムに任せる"
    claimed = GOOD + "この人は権限があるので問題ない"
    # THEN §4.8.2's query still lists it, as a warning, while a claim stays critical (alerted)
    severities = {f.code: f.severity for f in findings_for(make_record(T0, llm_reasoning=reported))}
    assert severities == {"reasoning.permission_claim": "warning"}
    assert {f.severity for f in findings_for(make_record(T0, llm_reasoning=claimed))} == {"critical"}
