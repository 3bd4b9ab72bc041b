"""The in-process chain: idempotency, exactly-once effects, section ownership, dead letters."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from shared_lib.delivery import idempotency
from shared_lib.errors import LayerRetry
from shared_lib.layers.ingress import accept
from shared_lib.runtime import Runtime
from shared_lib.tools.directory import seed_directory
from shared_lib.turn.envelope import LAYER_SECTIONS, SHARED_FIELDS, Turn
from shared_lib.turn.inbound import InboundMessage
from shared_lib.wiring.composition import LAYERS, build_runtime, runner, wire_inprocess

ORG = "acme"


def runtime(clock: Callable[[], datetime] | None = None, **env: str) -> Runtime:
    settings = {"CHARTER_ENV": "test", "CHARTER_LLM": "none", "CHARTER_CHANNELS": "recording", **env}
    rt = build_runtime(settings, **({"clock": clock} if clock else {}))
    wire_inprocess(rt)
    seed_directory(
        rt.store,
        ORG,
        [
            {"user_id": "u1", "name": "鈴木一郎", "level": 2, "department_id": "d1"},
            {"user_id": "u2", "name": "田中太郎", "level": 2, "department_id": "d1"},
        ],
        {"d1": None},
    )
    return rt


def inbound(text: str, event_id: str = "e1", user: str = "u1") -> InboundMessage:
    return InboundMessage(
        channel="http",
        org_id=ORG,
        room_id="r1",
        user_id=user,
        text=text,
        message_id=event_id,
        event_id=event_id,
        received_at=datetime.now(UTC),
    )


def sent(rt: Runtime) -> list[str]:
    return [r.text for r in rt.channels["http"].sent]  # type: ignore[attr-defined]


def test_a_turn_is_dated_by_the_runtimes_clock_as_its_layers_are():
    # GIVEN a product whose clock is New Year's Eve night (a test's, `charter say --now`'s)
    eve = datetime(2026, 12, 31, 14, 30, tzinfo=UTC)
    rt = runtime(clock=lambda: eve)
    # WHEN a message is accepted
    turn_id = accept(rt, inbound("こんにちは"))
    record = rt.store.get(f"orgs/{ORG}/observability/{turn_id}")
    # THEN its record is dated as its layers' timings are, by that clock, not by the wall clock
    assert record is not None and record["timestamp"] == eve, record["timestamp"]
    assert 0 <= record["total_duration_ms"] < 60_000, record["total_duration_ms"]


def test_a_turn_goes_through_every_layer_and_is_recorded_once():
    rt = runtime()
    turn_id = accept(rt, inbound("田中さんに明日までに見積書のタスクをお願い"))
    record = rt.store.get(f"orgs/{ORG}/observability/{turn_id}")
    assert record is not None
    assert [e["layer"] for e in record["trail"]] == [
        "context",
        "brain",
        "guardian",
        "authorizer",
        "executor",
        "responder",
    ]
    assert len(sent(rt)) == 1
    assert len(rt.store.query(f"orgs/{ORG}/tasks")) == 1


def test_the_same_webhook_event_twice_makes_one_turn():
    rt = runtime()
    first = accept(rt, inbound("田中さんに見積書のタスクをお願い", "same"))
    second = accept(rt, inbound("田中さんに見積書のタスクをお願い", "same"))
    assert first is not None and second is None
    assert len(sent(rt)) == 1 and len(rt.store.query(f"orgs/{ORG}/tasks")) == 1


@pytest.mark.parametrize(
    "topic_key", ["received", "contextualized", "proposed", "guarded", "authorized", "executed", "completed"]
)
def test_redelivering_any_hop_repeats_no_work_and_no_effect(topic_key):
    # GIVEN a finished turn
    rt = runtime()
    accept(rt, inbound("田中さんに見積書のタスクをお願い"))
    published = [p for p in rt.bus.published if p[0] == topic_key]  # type: ignore[attr-defined]
    assert published
    # WHEN the same message of that hop is delivered again
    _, data, attrs, key = published[0]
    rt.bus.publish(topic_key, data, attrs, key)
    # THEN there is still one reply, one task, one record
    assert len(sent(rt)) == 1
    assert len(rt.store.query(f"orgs/{ORG}/tasks")) == 1
    assert len(rt.store.query(f"orgs/{ORG}/observability")) == 1


def test_each_layer_changes_only_its_own_section():
    rt = runtime()
    accept(rt, inbound("田中さんに見積書のタスクをお願い"))
    by_layer = {
        attrs["layer"]: Turn.from_message(data, attrs, rt.store)
        for topic, data, attrs, _ in rt.bus.published  # type: ignore[attr-defined]
        if topic not in ("events", "shadow", "deadletter")
    }
    order = ["ingress", "context", "brain", "guardian", "authorizer", "executor", "responder"]
    for before, after in itertools.pairwise(order):
        a, b = by_layer[before].model_dump(), by_layer[after].model_dump()
        changed = {k for k in a if a[k] != b[k]} - SHARED_FIELDS
        assert changed <= LAYER_SECTIONS[after], f"{after} changed {changed - LAYER_SECTIONS[after]}"


def test_a_layer_that_keeps_failing_dead_letters_the_turn_and_the_observer_records_it():
    rt = runtime(CHARTER_FAULT_INJECTION="1")
    accept(rt, inbound("[[fail:guardian]] こんにちは", "boom"))
    accept(rt, inbound("こんにちは", "fine", user="u2"))
    failures = rt.store.query(f"orgs/{ORG}/failures")
    assert len(failures) == 1 and failures[0][1]["produced_by"] == "brain"
    assert rt.store.query("alerts")
    assert len(sent(rt)) == 1  # the other conversation's turn was not blocked


def test_a_claim_held_by_a_live_delivery_makes_the_duplicate_retry_later():
    # (the guardian runs without a claim since issue 39: the brain is a stage that claims)
    rt = runtime()
    turn_id = accept(rt, inbound("こんにちは"))
    _, data, attrs, _ = next(p for p in rt.bus.published if p[0] == "contextualized")  # type: ignore[attr-defined]
    turn = Turn.from_message(data, attrs)
    path = idempotency.claim_path(ORG, turn_id, "brain", 0)
    rt.store.set(path, {"status": "in_progress", "lease_until": datetime.now(UTC) + timedelta(minutes=1)})
    with pytest.raises(LayerRetry):
        runner(rt, "brain").handle(data, attrs)
    # an expired lease is taken over: the step runs again (its publish is absorbed downstream)
    rt.store.set(path, {"status": "in_progress", "lease_until": datetime.now(UTC) - timedelta(seconds=1)})
    assert runner(rt, "brain").handle(data, attrs) not in ("duplicate", "")
    assert turn.turn_id == turn_id
    assert len(sent(rt)) == 1


@pytest.mark.parametrize(("topic_key", "stage"), [("proposed", "guardian"), ("guarded", "authorizer")])
def test_a_stage_without_a_claim_runs_again_and_the_next_stages_claim_absorbs_it(topic_key, stage):
    # GIVEN a finished turn of a tool call (a task for 田中さん)
    rt = runtime()
    turn_id = accept(rt, inbound("田中さんに明日までに見積書📄のタスクをお願い"))
    _, data, attrs, key = next(p for p in rt.bus.published if p[0] == topic_key)  # type: ignore[attr-defined]
    before = len(rt.bus.published)  # type: ignore[attr-defined]
    # WHEN the stage's message is delivered again
    again = runner(rt, stage).handle(data, attrs)
    # THEN the stage decided again without a claim of its own and published the same turn and
    # step under the same ordering key; so did the authorizer after it (no claim either), and the
    # executor's claim took it as a duplicate: nothing after it ran again
    assert again in ("allow", "allowed"), again
    assert rt.store.get(idempotency.claim_path(ORG, turn_id, stage, 0)) is None
    republished = [p for p in rt.bus.published[before:] if p[0] != "events"]  # type: ignore[attr-defined]
    assert [a["layer"] for _, _, a, _ in republished] == ["guardian", "authorizer"][
        ["guardian", "authorizer"].index(stage) :
    ]
    assert {(a["turn_id"], a["step"], k) for _, _, a, k in republished} == {(turn_id, attrs["step"], key)}
    assert len(sent(rt)) == 1 and len(rt.store.query(f"orgs/{ORG}/tasks")) == 1


def test_a_failed_layer_releases_its_claim_so_the_redelivery_can_work():
    rt = runtime(CHARTER_FAULT_INJECTION="1")
    rt.bus.max_delivery_attempts = 1  # type: ignore[attr-defined]
    accept(rt, inbound("[[fail:executor]] 田中さんに見積書のタスクをお願い"))
    claims = [p for p, _ in rt.store.dump().items() if "/idempotency/" in p and "-executor-" in p]  # type: ignore[attr-defined]
    assert claims == []


def test_every_target_is_a_layer_or_has_its_own_handler():
    assert set(LAYERS) | {"ingress", "observer", "admin"} >= {
        "context",
        "brain",
        "brain_shadow",
        "guardian",
        "authorizer",
        "executor",
        "responder",
    }


@pytest.mark.parametrize(("candidate", "claimed"), [(None, False), ("legacy", True)])
def test_the_shadow_brain_claims_only_a_turn_it_samples(candidate, claimed):
    # GIVEN a served turn's context message, the person sampled for a candidate arm or not
    rt = runtime()
    turn_id = accept(rt, inbound("来週の会議室、押さえといてもらえる？🙏"))
    _, data, attrs, _ = next(p for p in rt.bus.published if p[0] == "contextualized")  # type: ignore[attr-defined]
    turn = Turn.from_message(data, attrs)
    turn.flags.shadow_candidate_arm = candidate
    data, attrs = turn.to_message("context")
    # WHEN the shadow brain gets it twice
    first = runner(rt, "brain_shadow").handle(data, attrs)
    again = runner(rt, "brain_shadow").handle(data, attrs)
    # THEN a sampled turn ran its candidate once under a claim (the second is a duplicate); a turn
    # not sampled was answered from the envelope both times, with no claim and nothing published
    claim = rt.store.get(idempotency.claim_path(ORG, turn_id, "brain_shadow", 0))
    if claimed:
        assert first.startswith("candidate") and again == "duplicate"
        assert claim is not None and claim["status"] == "completed"
    else:
        assert first == again == "not_sampled" and claim is None
