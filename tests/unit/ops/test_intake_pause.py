"""The admin's Pause holds intake (shared_lib.delivery.intake): every webhook is acknowledged and
its turn held, sealed; Resume answers the held turns in the order they came, each exactly once,
even when the release dies between a publish and its bookkeeping, or a message arrives while it
drains."""

from __future__ import annotations

import json

import pytest
from ops_fakes import ORG, make_runtime, replies, send

from shared_lib.delivery import intake
from shared_lib.ops import controls, monitoring

BY = {"author": "u-kazu", "reason": "LINE公式アカウントの障害対応中"}

# what people really send, in the order they sent it
MESSAGES = [
    ("u-suzuki", "おはようございます！今日の予定おしえてー"),
    ("u-tanaka", "見積書のタスク、期限いつだったっけ？？"),
    ("u-suzuki", "あと、ｶﾞﾝﾄﾁｬｰﾄの件どうなった🙏"),
]


def _held_bodies(rt) -> list[str]:
    return [str(doc["body"]) for _, doc in rt.store.query(intake.HELD_COLLECTION)]


def test_a_paused_intake_acknowledges_holds_sealed_and_answers_nobody():
    # GIVEN a runtime with a vault key, paused by an operator
    rt = make_runtime()
    assert rt.vault is not None
    controls.apply(rt, "pause", **BY)
    # WHEN three messages arrive
    turn_ids = [send(rt, text, user=user) for user, text in MESSAGES]
    # THEN each was accepted (a turn id), held in order, sealed, and nobody was answered
    assert len(set(turn_ids)) == 3 and replies(rt) == []
    rows = rt.store.query(intake.HELD_COLLECTION, order_by="seq")
    assert [doc["turn_id"] for _, doc in rows] == turn_ids
    assert all(doc["sealed"] for _, doc in rows)
    assert not any("ガント" in body or "見積書" in body for body in _held_bodies(rt))
    assert controls.state(rt)["effective"] == "paused"


def test_resume_answers_every_held_turn_once_in_order():
    rt = make_runtime()
    controls.apply(rt, "pause", **BY)
    turn_ids = [send(rt, text, user=user) for user, text in MESSAGES]
    # WHEN an operator resumes
    out = controls.apply(rt, "resume", **BY)
    # THEN the three are answered, once each, in the order they came, and nothing is held any more
    sent = rt.channels["http"].sent  # type: ignore[attr-defined]
    assert out["released"] == 3 and [r.user_id for r in sent] == [u for u, _ in MESSAGES]
    assert intake.read(rt.store)["state"] == "running" and rt.store.query(intake.HELD_COLLECTION) == []
    assert all(rt.store.get(f"orgs/{ORG}/observability/{t}") is not None for t in turn_ids)


class StoreThatFailsOnce:
    """The runtime's store, whose next transaction fails once ``arm`` was called: a release that
    dies between a turn's publish and its bookkeeping."""

    def __init__(self, inner):
        self.inner, self.armed = inner, False

    def arm(self) -> None:
        self.armed = True

    def run_transaction(self, fn):
        if self.armed:
            self.armed = False
            raise ConnectionError("firestore unavailable")
        return self.inner.run_transaction(fn)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_a_release_that_dies_after_publishing_is_finished_by_the_heartbeat_without_a_second_reply():
    # GIVEN held turns, and a release whose store fails right after the first publish
    rt = make_runtime()
    controls.apply(rt, "pause", **BY)
    [send(rt, text, user=user) for user, text in MESSAGES]
    assert intake.resume(rt.store, author="u-kazu", reason="復旧", now=rt.clock())
    flaky = StoreThatFailsOnce(rt.store)
    publish = intake.bus_publisher(rt.bus, "received", rt.store, blob_ttl_days=1)

    def publish_then_fail(turn):
        publish(turn)
        flaky.arm()

    with pytest.raises(ConnectionError):
        intake.release(flaky, publish_then_fail, vault=rt.vault, now=rt.clock())
    # the first turn was published (and answered) but is still held; intake still drains
    assert len(replies(rt)) == 1 and intake.read(rt.store)["state"] == "draining"
    # WHEN the scheduler's heartbeat comes
    beat = monitoring.heartbeat(rt)
    # THEN the held turns are released, the first a second time, and still everyone got one reply
    assert beat["released"] == 3
    sent = rt.channels["http"].sent  # type: ignore[attr-defined]
    assert [r.user_id for r in sent] == [u for u, _ in MESSAGES]
    assert intake.read(rt.store)["state"] == "running"


def test_a_message_that_arrives_while_intake_drains_waits_behind_the_held_ones():
    # GIVEN a resumed intake whose held turns are not yet released
    rt = make_runtime()
    controls.apply(rt, "pause", **BY)
    first = send(rt, "至急！サーバー落ちてる？", user="u-suzuki")
    assert intake.resume(rt.store, author="u-kazu", reason="復旧", now=rt.clock())
    # WHEN the same person writes again before the release ran
    second = send(rt, "あ、復旧したっぽい。ありがとう", user="u-suzuki")
    # THEN it is held behind the first, and the release answers both in that order
    held = [doc["turn_id"] for _, doc in rt.store.query(intake.HELD_COLLECTION, order_by="seq")]
    assert held == [first, second] and replies(rt) == []
    assert controls.release_held(rt).published == 2
    assert len(replies(rt)) == 2 and intake.read(rt.store)["state"] == "running"


def test_a_redelivered_webhook_while_paused_is_held_once():
    # GIVEN a paused intake and a message accepted once
    rt = make_runtime()
    controls.apply(rt, "pause", **BY)
    from datetime import timedelta

    from shared_lib.layers.ingress import accept
    from shared_lib.turn.inbound import InboundMessage

    msg = InboundMessage(
        channel="http",
        org_id=ORG,
        room_id="room-1",
        user_id="u-suzuki",
        text="経費精算の締め日って25日で合ってる？",
        message_id="m-redeliver",
        event_id="ev-redeliver",
        received_at=rt.clock(),
    )
    assert accept(rt, msg) is not None
    # WHEN the provider delivers it again
    again = accept(rt, msg.model_copy(update={"received_at": rt.clock() + timedelta(seconds=3)}))
    # THEN it is a duplicate: one held turn, one reply after resume
    assert again is None and intake.read(rt.store)["held"] == 1
    controls.apply(rt, "resume", **BY)
    assert len(replies(rt)) == 1
    assert json.loads(json.dumps(intake.read(rt.store), default=str))["held"] == 0


def test_a_held_turn_deleted_by_other_means_never_leaves_intake_draining():
    # GIVEN two held turns, one of which a data purge deleted behind the intake's back
    rt = make_runtime()
    controls.apply(rt, "pause", **BY)
    gone = send(rt, "退職するので私のデータ消してください", user="u-suzuki")
    send(rt, "来週のシフト表まだ？", user="u-tanaka")
    [path] = [p for p, doc in rt.store.query(intake.HELD_COLLECTION) if doc["turn_id"] == gone]
    rt.store.delete(f"{intake.HELD_COLLECTION}/{path}")
    # WHEN the operator resumes
    out = controls.apply(rt, "resume", **BY)
    # THEN the turn left is answered and intake runs again, whatever the count said
    assert out["released"] == 1 and out["effective"] == "running"
    assert [r.user_id for r in rt.channels["http"].sent] == ["u-tanaka"]  # type: ignore[attr-defined]


class _Reads:
    """A memory store that counts reads of the intake document."""

    def __init__(self) -> None:
        from shared_lib.adapters.memory_store import MemoryStore

        self.store, self.reads = MemoryStore(), 0

    def get(self, path: str):  # type: ignore[no-untyped-def]
        self.reads += path == intake.INTAKE_DOC
        return self.store.get(path)


def test_a_running_ingress_reads_the_pause_once_a_flags_lifetime_and_a_paused_one_every_message():
    from datetime import UTC, datetime

    counted, now = _Reads(), [0.0]
    gate = intake.IntakeGate(ttl=10.0, monotonic=lambda: now[0])
    # GIVEN intake running: forty messages over nineteen and a half seconds cost two reads
    for i in range(40):
        now[0] = i * 0.5
        assert gate.holding(counted) is False  # type: ignore[arg-type]
    assert counted.reads == 2
    # WHEN the operator presses Pause (another process) THEN it holds from the next read on,
    # at most one lifetime later, and every held message reads the document again
    intake.pause(
        counted.store, author="u-kazu", reason="障害対応", now=datetime(2026, 11, 30, 22, 0, tzinfo=UTC)
    )
    held = []
    for i in range(40, 80):
        now[0] = i * 0.5
        held.append(gate.holding(counted))  # type: ignore[arg-type]
    first = held.index(True)
    assert first * 0.5 <= 10.0 and all(held[first:])
    reads_while_paused = counted.reads - 2
    assert reads_while_paused == len(held) - first
