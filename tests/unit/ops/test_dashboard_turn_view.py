"""The dashboard's turn view (issue 38, deliverable 3): the span waterfall a turn's recorded
spans make, tiles that count what they say, and errors shown with their meaning and the
runbook's line."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from ops_fakes import ORG, TRACE_ID, Clock, make_record, make_runtime
from test_ops_admin import client

from shared_lib.errors import CATALOGUE
from shared_lib.ops.error_guide import GUIDE, explain
from shared_lib.ops.waterfall import waterfall
from shared_lib.state import rollups

T0 = 1_764_300_000_000_000_000  # a turn's first span, in ns
MS = 1_000_000


def span(name: str, sid: str, parent: str | None, start_ms: float, ms: float, **extra: Any) -> dict[str, Any]:
    """A span document as the store exporter writes it (``adapters.trace_exporter``)."""
    service = extra.pop("service", name.removeprefix("layer ").split(" ")[0])
    return {
        "trace_id": TRACE_ID,
        "span_id": sid,
        "parent_span_id": parent,
        "name": name,
        "kind": extra.pop("kind", "INTERNAL"),
        "service": service,
        "start_ns": T0 + int(start_ms * MS),
        "duration_ms": ms,
        "status": extra.pop("status", "UNSET"),
        "attributes": extra.pop("attributes", {}),
        "turn_id": "01KB0COLDTURN",
    }


def cold_turn() -> list[dict[str, Any]]:
    """A cold turn of 62 s: the brain's instance started 60 s after the context published to it.

    Given out of order, as a query returns them."""
    return [
        span("layer brain", "b", "c", 60_050, 1_900, kind="CONSUMER"),
        span("ingress", "i", None, 0, 12, kind="SERVER"),
        span(
            "chat claude-sonnet-4-5",
            "llm",
            "b",
            60_100,
            1_700,
            service="brain",
            attributes={"gen_ai.usage.input_tokens": 1200},
        ),
        span("ingress accept", "a", "i", 2, 8, kind="PRODUCER", service="ingress"),
        span("layer context", "c", "a", 40, 10, kind="CONSUMER"),
        span(
            "execute_tool chatwork_task_create",
            "t",
            "x",
            61_990,
            4,
            service="executor",
            attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "chatwork_task_create"},
        ),
        # the executor's delivery began before the brain's span ended: no queue before it
        span("layer executor", "x", "b", 61_940, 60, kind="CONSUMER"),
        span("firestore transaction", "s", "x", 61_995, 3, attributes={"db.system": "firestore"}),
    ]


# --------------------------------------------------------------------------- the waterfall


def test_the_waterfall_orders_bars_by_start_from_the_turns_first_span():
    # GIVEN the spans of a cold turn, out of order
    # WHEN they are laid out
    w = waterfall(cold_turn())
    # THEN the bars run in start order, a queue just before the layer it waited for
    assert [b["label"] for b in w["bars"]] == [
        "ingress",
        "ingress accept",
        "queue → context",
        "layer context",
        "queue → brain",
        "layer brain",
        "LLM claude-sonnet-4-5 (brain)",
        "layer executor",
        "tool chatwork_task_create",
        "firestore transaction",
    ]
    assert [b["kind"] for b in w["bars"]] == [
        "hop",
        "hop",
        "queue",
        "layer",
        "queue",
        "layer",
        "llm",
        "layer",
        "tool",
        "store",
    ]
    # AND every offset is from the ingress's start, the whole turn 62 s
    assert w["total_ms"] == pytest.approx(62_000)
    brain = next(b for b in w["bars"] if b["label"] == "layer brain")
    assert brain["offset_ms"] == pytest.approx(60_050) and brain["duration_ms"] == pytest.approx(1_900)
    assert brain["left_pct"] == pytest.approx(100 * 60_050 / 62_000, abs=1e-3)
    assert brain["width_pct"] == pytest.approx(100 * 1_900 / 62_000, abs=1e-3)
    assert brain["depth"] == 3 and brain["service"] == "brain"


def test_the_gap_between_a_publisher_and_its_consumer_is_queueing():
    # GIVEN the cold turn WHEN it is laid out
    w = waterfall(cold_turn())
    queues = {b["label"]: b for b in w["bars"] if b["kind"] == "queue"}
    # THEN the wait before the brain runs from the context's end to the brain's start
    assert queues["queue → brain"]["offset_ms"] == pytest.approx(50)
    assert queues["queue → brain"]["duration_ms"] == pytest.approx(60_000)
    assert queues["queue → context"]["offset_ms"] == pytest.approx(10)
    assert queues["queue → context"]["duration_ms"] == pytest.approx(30)
    # AND a consumer that started before its publisher ended waited for nothing
    assert "queue → executor" not in queues
    # AND the totals say where the time went: a minute in queues, under 2 s in the LLM
    assert w["totals"]["queue"] == pytest.approx(60_030)
    assert w["totals"]["llm"] == pytest.approx(1_700)
    assert w["totals"]["tool"] == pytest.approx(4)


def test_nested_spans_of_one_kind_are_counted_once_in_the_totals():
    # GIVEN a layer span with a second layer span inside it (a retry inside the same delivery)
    spans = [
        span("layer brain", "b", None, 0, 1_000, kind="CONSUMER"),
        span("layer brain", "b2", "b", 100, 400, kind="CONSUMER"),
        span("layer guardian", "g", "b", 2_000, 250, kind="CONSUMER"),
    ]
    # WHEN laid out THEN the layers' time is the union of their bars, the queue the gap
    w = waterfall(spans)
    assert w["totals"]["layer"] == pytest.approx(1_250)
    assert w["totals"]["queue"] == pytest.approx(1_000)
    assert w["total_ms"] == pytest.approx(2_250)


def test_a_turn_without_spans_has_no_bars():
    assert waterfall([]) == {
        "total_ms": 0.0,
        "bars": [],
        "totals": {k: 0.0 for k in ("hop", "queue", "layer", "llm", "tool", "store", "other")},
        "legend": waterfall([])["legend"],
    }


def test_a_failed_span_keeps_its_status_on_its_bar():
    spans = [span("execute_tool chatwork_task_complete", "t", None, 0, 30_000, status="ERROR")]
    (bar,) = waterfall(spans)["bars"]
    assert bar["status"] == "ERROR" and bar["kind"] == "tool" and bar["width_pct"] == 100


# --------------------------------------------------------------------------- the API


NOW = datetime(2026, 11, 25, 3, 0, tzinfo=UTC)  # 12:00 on Wednesday 25 November in Tokyo


def stored(rt: Any, **fields: Any) -> Any:
    rec = make_record(NOW - timedelta(minutes=5), **fields)
    rt.store.set(f"orgs/{ORG}/observability/{rec.record_id}", rec.store_doc())
    return rec


def test_the_waterfall_route_answers_a_recorded_turns_spans():
    # GIVEN a turn recorded with its trace, and the spans the stack's exporter stored for it
    rt = make_runtime(clock=Clock(NOW))
    rec = stored(rt, trace_id=TRACE_ID, input_message="明日の会議、何時からやったっけ？🙏")
    for doc in cold_turn():
        rt.store.set(f"trace_spans/{TRACE_ID}-{doc['span_id']}", doc)
    rt.store.set("trace_spans/other-z", {**span("layer brain", "z", None, 0, 5), "trace_id": "f" * 32})
    # WHEN the page asks for the turn's waterfall
    r = client(rt).get(f"/api/turns/{rec.record_id}/waterfall?org={ORG}")
    # THEN it has the trace's bars only, with the queue the hop made
    assert r.status_code == 200, r.get_json()
    body = r.get_json()
    assert body["trace_id"] == TRACE_ID and body["cloud_trace_url"] is None
    assert len(body["bars"]) == 10 and "z" not in {b["span_id"] for b in body["bars"]}
    assert body["totals"]["queue"] == pytest.approx(60_030)


def test_the_waterfall_route_of_a_turn_without_a_trace_or_record():
    rt = make_runtime(clock=Clock(NOW))
    rec = stored(rt, trace_id=None)
    c = client(rt)
    # a record without a trace id: no bars; a turn nobody recorded: 404
    assert c.get(f"/api/turns/{rec.record_id}/waterfall?org={ORG}").get_json()["bars"] == []
    missing = c.get(f"/api/turns/01KB0NOSUCHTURN/waterfall?org={ORG}")
    assert missing.status_code == 404 and missing.get_json()["error"] == "not_found"


# --------------------------------------------------------------------------- errors explained


def test_every_catalogued_error_has_a_meaning_and_a_runbook_line():
    assert set(GUIDE) == set(CATALOGUE)
    for code in CATALOGUE:
        g = explain(code)
        assert g["known"] and g["meaning"] and g["runbook"] and g["layer"] == CATALOGUE[code].layer


def test_an_unknown_code_is_said_to_be_unknown_not_hidden():
    g = explain("quota_exceeded_v2")
    assert g["known"] is False and g["code"] == "quota_exceeded_v2" and g["runbook"]


def test_a_turns_errors_come_with_their_meaning_and_runbook_line():
    # GIVEN a turn whose LLM call hit the rate limit and whose tool call failed upstream
    rt = make_runtime(clock=Clock(NOW))
    err = {
        "code": "rate_limit",
        "layer": "brain",
        "category": "llm_error",
        "severity": "high",
        "message": "429",
    }
    rec = stored(
        rt,
        errors=[err],
        execution_result=[
            {"tool_name": "chatwork_task_create", "ok": False, "error_code": "external_api_error"},
            {"tool_name": "chatwork_task_list", "ok": True, "error_code": None},
        ],
    )
    # WHEN the turn is opened
    body = client(rt).get(f"/api/turns/{rec.record_id}?org={ORG}").get_json()
    # THEN each failing code is explained once, with the runbook's line
    guide = body["error_guide"]
    assert list(guide) == ["rate_limit", "external_api_error"]
    assert guide["rate_limit"]["runbook"] == GUIDE["rate_limit"][1]
    assert guide["external_api_error"]["meaning"] == GUIDE["external_api_error"][0]


# --------------------------------------------------------------------------- tiles


def counted(store: Any, *records: Any) -> dict[str, Any]:
    for rec in records:
        rollups.add(store, rec)
    return client(make_runtime(store=store, clock=Clock(NOW))).get(f"/api/stats?org={ORG}").get_json()


def conv(at: datetime, user: str, room: str, **fields: Any) -> Any:
    return make_record(at, user_id=user, room_id=room, conversation_key=f"{ORG}/{room}/{user}", **fields)


def test_the_conversations_tile_counts_conversations_and_the_turns_tile_turns():
    from shared_lib.adapters.memory_store import MemoryStore

    at = NOW - timedelta(hours=2)
    # GIVEN today: 鈴木 writes three times in the general room, 田中 once there, 鈴木 once in another
    # room, a shadow candidate of one of them, and a turn from yesterday evening (Tokyo)
    store = MemoryStore()
    s = counted(
        store,
        conv(at, "u-suzuki", "room-general"),
        conv(at + timedelta(minutes=1), "u-suzuki", "room-general"),
        conv(at + timedelta(minutes=7), "u-suzuki", "room-general"),
        conv(at, "u-tanaka", "room-general"),
        conv(at, "u-suzuki", "room-eigyo"),
        conv(at, "u-tanaka", "room-general", shadow=True),
        conv(datetime(2026, 11, 24, 14, 59, tzinfo=UTC), "u-kazu", "room-general"),
    )
    # THEN three conversations and five turns today
    assert (s["conversations"], s["turns"]) == (3, 5)


def test_a_superseded_record_does_not_count_its_conversation_again():
    from shared_lib.adapters.memory_store import MemoryStore

    # GIVEN a turn counted, then its later step superseding it in the observer's transaction
    store = MemoryStore()
    first = conv(NOW - timedelta(hours=1), "u-suzuki", "room-general")
    later = first.model_copy(update={"step_count": 2})
    rollups.add(store, first)
    store.run_transaction(lambda txn: rollups.count_in(txn, ORG, "Asia/Tokyo", later, first))
    # WHEN the panel is read THEN one conversation, one turn
    s = client(make_runtime(store=store, clock=Clock(NOW))).get(f"/api/stats?org={ORG}").get_json()
    assert (s["conversations"], s["turns"]) == (1, 1)


def test_the_day_roll_up_keeps_no_ids_of_people_or_rooms():
    from shared_lib.adapters.memory_store import MemoryStore

    store = MemoryStore()
    rollups.add(store, conv(NOW, "u-suzuki", "room-general"))
    day = NOW.astimezone(rollups.ZoneInfo("Asia/Tokyo")).date()
    doc = store.get(rollups.path(ORG, day)) or {}
    text = repr(doc)
    assert "u-suzuki" not in text and "room-general" not in text
    markers = store.query(f"{rollups.path(ORG, day)}/daily_conversations")
    assert doc["totals"]["conversations"] == 1 and len(markers) == 1
    assert "u-suzuki" not in repr(markers) and "room-general" not in repr(markers)


def entries(doc: Any) -> int:
    """How many keys and items a document holds, nested ones too."""
    if isinstance(doc, dict):
        return len(doc) + sum(entries(v) for v in doc.values())
    return len(doc) + sum(entries(v) for v in doc) if isinstance(doc, list) else 0


def test_the_day_roll_up_stays_the_same_size_however_many_conversations_it_counts():
    from shared_lib.adapters.memory_store import MemoryStore

    # GIVEN a busy Monday: 60 people each writing in their own room, between 9:00 and 9:59 Tokyo
    store = MemoryStore()
    day = NOW.astimezone(rollups.ZoneInfo("Asia/Tokyo")).date()
    nine = datetime(2026, 11, 25, 0, 0, tzinfo=UTC)
    sizes = []
    for i in range(60):
        rollups.add(store, conv(nine + timedelta(seconds=59 * i), f"u-{i:03d}", f"room-{i:03d}"))
        sizes.append(entries(store.get(rollups.path(ORG, day))))
    # THEN every conversation is counted, and the roll-up every turn reads and writes did not grow
    s = client(make_runtime(store=store, clock=Clock(NOW))).get(f"/api/stats?org={ORG}").get_json()
    assert (s["conversations"], s["turns"]) == (60, 60)
    assert sizes == [sizes[0]] * 60
    assert len(store.query(f"{rollups.path(ORG, day)}/daily_conversations")) == 60


def test_a_roll_up_written_before_the_markers_still_counts_its_conversations_once():
    from shared_lib.adapters.memory_store import MemoryStore

    # GIVEN today's roll-up as the observer wrote it before the markers: 鈴木's conversation in its map
    store = MemoryStore()
    day = NOW.astimezone(rollups.ZoneInfo("Asia/Tokyo")).date()
    old = conv(NOW - timedelta(hours=2), "u-suzuki", "room-general")
    rollups.add(store, old)
    doc = store.get(rollups.path(ORG, day)) or {}
    store.set(rollups.path(ORG, day), {**doc, "conversation_ids": {rollups.conversation_id(old): 1}})
    for marker, _ in store.query(f"{rollups.path(ORG, day)}/daily_conversations"):
        store.delete(f"{rollups.path(ORG, day)}/daily_conversations/{marker}")
    # WHEN 鈴木 writes again in that room, and 田中 for the first time today
    rollups.add(store, conv(NOW - timedelta(hours=1), "u-suzuki", "room-general"))
    rollups.add(store, conv(NOW - timedelta(hours=1), "u-tanaka", "room-general"))
    # THEN two conversations, three turns
    s = client(make_runtime(store=store, clock=Clock(NOW))).get(f"/api/stats?org={ORG}").get_json()
    assert (s["conversations"], s["turns"]) == (2, 3)
