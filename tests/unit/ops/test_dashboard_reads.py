"""The dashboard scales: a refresh reads roll-ups, not records, and the observer counts each
record into them exactly once (issue 21, deliverable 3)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from ops_fakes import ORG, TASK_CREATE, TASK_DONE, Clock, make_record, make_runtime, send
from test_ops_admin import client

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.admin.api import SHADOW_LATEST
from shared_lib.layers import observer
from shared_lib.ops.metrics import bucket_stats, window_stats
from shared_lib.rollout.comparison import compare, comparison_path
from shared_lib.state import rollups
from shared_lib.turn.envelope import Turn

NOW = datetime(2026, 11, 23, 3, 30, tzinfo=UTC)  # 12:30 on the 23rd in Tokyo
# Every request the dashboard makes: the overview's refresh, then the turns, LLM-call and
# controls views as the page opens them (the limits are the page's).
POLLED = (
    "/api/session",
    "/api/stats",
    "/api/metrics?hours=24&step=60",
    "/api/alerts?since=24h&limit=50",
    "/api/flags",
    "/api/turns?since=30d&limit=20",
    "/api/llm_calls?limit=20",
    "/api/evaluations?limit=20",
)
# thresholds (1 get per panel, metrics), 31 roll-ups a month at most, 2 days of hours for the
# chart, the two lists' limits, the flags and controls documents: well under 100 reads
READ_BOUND = 100


class CountingStore:
    """The memory store, counting documents read as Firestore bills them (a query: its rows,
    at least one; a get: one)."""

    def __init__(self, inner: MemoryStore) -> None:
        self.inner, self.reads, self.counting = inner, 0, False

    def get(self, path: str) -> Any:
        self.reads += self.counting
        return self.inner.get(path)

    def query(self, collection: str, **kw: Any) -> Any:
        rows = self.inner.query(collection, **kw)
        self.reads += max(1, len(rows)) * self.counting
        return rows

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def seeded(per_day: int) -> tuple[Any, CountingStore]:
    """A runtime whose store holds ``per_day`` records on every day of the month so far (four
    people in turn, so at most four conversations a day), each stored and counted as the
    observer does it."""
    store = CountingStore(MemoryStore())
    rt = make_runtime(store=store, clock=Clock(NOW))
    for day in range(23):
        for i in range(per_day):
            at = datetime(2026, 10, 31, 16, tzinfo=UTC) + timedelta(days=day, minutes=20 * i)
            user = f"u-{i % 4}"  # four people talk in the room, each a conversation
            rec = make_record(
                at,
                guardian_action="block" if i % 5 == 0 else "allow",
                user_id=user,
                conversation_key=f"{ORG}/room-1/{user}",
            )
            store.inner.set(f"orgs/{ORG}/observability/{rec.record_id}", rec.store_doc())
            rollups.add(store.inner, rec, "Asia/Tokyo")
    return rt, store


def reads_of_a_refresh(rt: Any, store: CountingStore) -> tuple[int, dict[str, Any]]:
    c = client(rt)
    store.reads, store.counting = 0, True
    answers = {}
    for url in POLLED:
        response = c.get(url)
        assert response.status_code == 200, (url, response.get_json())
        answers[url] = response.get_json()
    store.counting = False
    return store.reads, answers


def test_a_refresh_reads_as_many_documents_for_600_turns_as_for_46():
    # GIVEN a month of two turns a day, and a month of twenty-six
    few_rt, few_store = seeded(2)
    many_rt, many_store = seeded(26)
    # WHEN the dashboard polls every endpoint it uses
    few, few_answers = reads_of_a_refresh(few_rt, few_store)
    many, many_answers = reads_of_a_refresh(many_rt, many_store)
    # THEN both read the same number of documents, under the bound, and the numbers are right
    assert few == many <= READ_BOUND, (few, many)
    assert few_answers["/api/stats"]["conversations"] == 2 and few_answers["/api/stats"]["turns"] == 2
    assert many_answers["/api/stats"]["conversations"] == 4 and many_answers["/api/stats"]["turns"] == 26
    assert many_answers["/api/stats"]["blocks"] == 6
    assert many_answers["/api/stats"]["cost"]["cost_month_usd"] == pytest.approx(23 * 26 * 0.01)
    # the last 24 hours end with this hour; yesterday's turns were between 01:00 and 09:20
    series = many_answers["/api/metrics?hours=24&step=60"]["series"]
    assert len(series) == 24 and sum(w["turns"] for w in series) == 26


def test_the_roll_up_says_what_the_records_say():
    # GIVEN replies, a confirmation, a block, a denial, tool errors, slow and fast LLM calls and a candidate
    t0 = datetime(2026, 11, 23, 1, tzinfo=UTC)
    rows = [
        make_record(t0),
        make_record(
            t0, output_type="tool_call", guardian_action="confirm", tool_calls_executed=2, tool_errors=1
        ),
        make_record(
            t0,
            guardian_action="block",
            arm="legacy",
            errors=[
                {"code": "x", "layer": "brain", "category": "internal", "severity": "error", "message": "m"}
            ],
        ),
        make_record(t0, auth_result="denied", total_duration_ms=3000.0),
        make_record(t0, usage={"llm_calls": 2, "llm_duration_ms": 24_000.0, "input_tokens": 7}, cost_usd=0.2),
    ]
    cand = make_record(t0, shadow=True, kind="shadow_candidate", cost_usd=0.5)
    store = MemoryStore()
    for r in [*rows, cand]:
        rollups.add(store, r, "Asia/Tokyo")
    # WHEN the day's roll-up is read
    (doc,) = rollups.read_days(store, t0.date(), t0.date(), org=ORG)
    start, end = t0, t0 + timedelta(days=1)
    from_rollup = bucket_stats(doc["totals"], start, end)
    exact = window_stats(rows, start, end, [cand])
    # THEN every figure agrees; the p95 is its histogram bucket's bound, never below the value
    skip = {"llm_latency_ms_p95"}
    assert {k: v for k, v in dataclasses.asdict(from_rollup).items() if k not in skip} == {
        k: v for k, v in dataclasses.asdict(exact).items() if k not in skip
    }
    assert exact.llm_latency_ms_p95 == 12_000.0 and from_rollup.llm_latency_ms_p95 == 12_000.0
    assert doc["totals"]["arms"] == {"legacy": 1, "llm": 4} and doc["totals"]["shadow_turns"] == 1


def completed(rt: Any) -> tuple[bytes, dict[str, str]]:
    _, data, attrs, _ = [p for p in rt.bus.published if p[0] == "completed"][-1]
    return data, attrs


def today(rt: Any) -> dict[str, Any]:
    (doc,) = rollups.read_days(
        rt.store, rt.clock().date() - timedelta(days=1), rt.clock().date() + timedelta(days=1), org=ORG
    )
    return doc["totals"]


def test_redelivered_superseded_and_candidate_records_are_counted_once(rt):
    # GIVEN a recorded turn
    send(rt, TASK_DONE)
    data, attrs = completed(rt)
    first = today(rt)
    assert first["turns"] == 1
    # WHEN its final envelope is redelivered three times
    for _ in range(3):
        assert observer.handle(rt, data, attrs) == "duplicate"
    # THEN the roll-up is unchanged
    assert today(rt) == first
    # WHEN a later step supersedes the record and its candidate arrives twice
    turn = Turn.from_message(data, attrs, rt.store)
    later = turn.model_copy(update={"step": 1})
    assert observer.handle(rt, *later.to_message("responder", rt.store)) == "recorded"
    candidate = turn.model_copy(update={"shadow": True})
    for _ in range(2):
        observer.handle(rt, *candidate.to_message("brain_shadow", rt.store))
    # THEN it is still one turn, with the later step's figures, and one candidate apart
    after = today(rt)
    assert after["turns"] == 1 and after["shadow_turns"] == 1
    assert sum(after["arms"].values()) == 1 and sum(after["latency_hist"]) == first["llm_turns"]


class Killed(Exception):
    pass


class KilledOnce:
    """A store whose next transaction dies after its body ran and before its commit."""

    def __init__(self, inner: MemoryStore) -> None:
        self.inner, self.armed = inner, False

    def run_transaction(self, fn: Any) -> Any:
        if not self.armed:
            return self.inner.run_transaction(fn)
        self.armed = False

        def body(txn: Any) -> Any:
            fn(txn)
            raise Killed("the observer's process was killed before the commit")

        return self.inner.run_transaction(body)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_an_observer_killed_mid_write_counts_the_record_once_on_redelivery():
    # GIVEN a turn whose observer was killed while writing its record and roll-up
    store = KilledOnce(MemoryStore())
    rt = make_runtime(store=store)
    send(rt, TASK_CREATE)
    data, attrs = completed(rt)
    turn = Turn.from_message(data, attrs, rt.store)
    store.inner.delete(f"orgs/{ORG}/observability/{turn.turn_id}")
    for day, _ in store.inner.query(f"orgs/{ORG}/daily_stats"):
        store.inner.delete(f"orgs/{ORG}/daily_stats/{day}")
    store.armed = True
    with pytest.raises(Killed):
        observer.handle(rt, data, attrs)
    assert store.inner.query(f"orgs/{ORG}/daily_stats") == []
    assert store.inner.get(f"orgs/{ORG}/observability/{turn.turn_id}") is None
    # WHEN the message is redelivered, twice
    results = [observer.handle(rt, data, attrs) for _ in range(2)]
    # THEN the record is written and counted exactly once
    assert results == ["recorded", "duplicate"]
    assert today(rt)["turns"] == 1


def with_comparisons(count: int) -> tuple[Any, CountingStore]:
    """A runtime whose store holds ``count`` shadow comparisons of the last six days."""
    store = CountingStore(MemoryStore())
    rt = make_runtime(store=store, clock=Clock(NOW))
    for i in range(count):
        at = NOW - timedelta(days=6) + timedelta(minutes=10 * i)
        served = make_record(at).store_doc()
        candidate = make_record(at, arm="llm").store_doc() | {"turn_id": served["turn_id"]}
        store.inner.set(comparison_path(ORG, served["turn_id"]), compare(served, candidate))
    return rt, store


def test_the_shadow_view_reads_the_newest_comparisons_of_its_window_at_most():
    # GIVEN a week with a few comparisons, and one with more than the view reads
    few_rt, few_store = with_comparisons(12)
    many_rt, many_store = with_comparisons(SHADOW_LATEST + 150)
    # WHEN the shadow view refreshes
    url = "/api/shadow?since=7d"
    few_store.counting = many_store.counting = True
    few = client(few_rt).get(url).get_json()
    many = client(many_rt).get(url).get_json()
    # THEN the busy week is read up to the bound, and the page is told it is the newest part
    assert few["report"]["samples"] == 12 and few["sample"]["limited"] is False
    assert many["report"]["samples"] == SHADOW_LATEST and many["sample"]["limited"] is True
    guard_reads = few_store.reads - 12  # what the rollback guard's status reads, whatever the week
    assert many_store.reads - guard_reads == SHADOW_LATEST, (few_store.reads, many_store.reads)


def test_the_evaluator_monitor_reads_the_newest_runs_with_a_limit_and_the_judges_mean_spread():
    # GIVEN thirty Best-of-N runs, the judge's spread known on the even ones
    store = CountingStore(MemoryStore())
    rt = make_runtime(store=store, clock=Clock(NOW))
    for i in range(30):
        run = {
            "at": NOW - timedelta(minutes=i),
            "org_id": ORG,
            "turn_id": f"t{i:02d}",
            "difficulty": 4,
            "n": 6,
            "planned_n": 6,
            "judge": "full",
            "chosen_score": 0.8,
            "spread": 0.1,
            "judge_spread": 0.2 if i % 2 == 0 else None,
            "regenerated": i == 3,
            "fallback": False,
            "cost_usd": 0.01,
        }
        store.inner.set(f"orgs/{ORG}/evaluations/t{i:02d}-0", run)
    # WHEN the page asks for the latest twenty
    store.reads, store.counting = 0, True
    data = client(rt).get("/api/evaluations?limit=20").get_json()
    # THEN twenty rows, newest first, twenty documents read, and the mean over the judged ones
    assert [e["turn_id"] for e in data["evaluations"]] == [f"t{i:02d}" for i in range(20)]
    assert store.reads == 20 and data["judge_spread_mean"] == 0.2 and data["regenerated"] == 1
