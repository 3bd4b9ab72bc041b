"""The soak's books (``infra.soak.accounting``): every webhook sent is accounted for, each
planned turn has one fate, the counts reconcile, and the ok rule holds only for a clean run.
Synthetic outcomes, no stack."""

from __future__ import annotations

import pytest

from infra.soak.accounting import (
    ACCEPTED,
    DEDUPLICATED,
    REFUSED,
    TIMED_OUT,
    UNREACHABLE,
    Attempt,
    KillRecord,
    Observed,
    Reply,
    TurnRecord,
    books,
)

DEGRADED = "ごめんなさい、いまAIにつながらないウル🐺 少し時間をおいてもう一度話しかけてほしいウル"


def turn(i: int, *attempts: Attempt, ingress: str | None = "same", **planned: object) -> TurnRecord:
    """Planned turn ``i`` with its send attempts; ``ingress`` the turn its dedupe record names
    (``"same"``: the one an accepted attempt named, else ``T{i}``)."""
    named = next((a.turn_ids[0] for a in attempts if a.outcome == ACCEPTED and a.turn_ids), None)
    record = TurnRecord(index=i, tag=f"S{i:04d}xab12", room=f"soak-room-{i % 7}", **planned)  # type: ignore[arg-type]
    record.attempts = list(attempts)
    record.ingress_turn_id = (named or f"T{i}") if ingress == "same" else ingress
    return record


def accepted(i: int, at: float = 1.0) -> Attempt:
    return Attempt(ACCEPTED, status=200, turn_ids=(f"T{i}",), at=at)


def reply(
    t: TurnRecord,
    *,
    key: str | None = None,
    text: str = "今日も暑いウル！水分とってほしいウル",
    at: float = 5.0,
):
    turn_id = t.ingress_turn_id or ""
    return Reply(turn_id=turn_id, key=key or f"{turn_id}-0", room=t.room, text=text, at=at)


def observe(turns: list[TurnRecord], replies: list[Reply], **over: object) -> Observed:
    fields: dict[str, object] = {
        "turns": turns,
        "replies": replies,
        "sent": sum(len(t.attempts) for t in turns),
        "received_replies": len(replies),
        "effects": {"task": {}, "memory": {}},
        "dead_letters": {},
        "degraded_texts": frozenset({DEGRADED}),
        "kills": [],
    }
    fields.update(over)
    return Observed(**fields)  # type: ignore[arg-type]


def clean(n: int) -> tuple[list[TurnRecord], list[Reply]]:
    turns = [turn(i, accepted(i)) for i in range(n)]
    return turns, [reply(t) for t in turns]


def test_a_clean_run_accounts_for_every_webhook_and_is_ok():
    # GIVEN 20 turns each accepted at once and answered once
    turns, replies = clean(20)
    # WHEN the books are made
    report = books(observe(turns, replies))
    # THEN every webhook and every turn is accounted for and the run is ok
    assert report["webhooks"]["sent"] == report["webhooks"]["accepted"] == 20
    assert report["fates"] == {
        "answered": 20,
        "duplicated": 0,
        "lost": 0,
        "unaccepted": 0,
        "dead_lettered": 0,
    }
    assert report["reconciliation"] == [] and report["failures"] == [] and report["ok"] is True


def test_eight_of_a_hundred_taken_on_a_timeout_and_deduplicated_on_retry_are_answered_turns():
    # GIVEN 100 turns, 8 of which timed out on their first attempt although the ingress took
    # them, so that the provider's retry was answered as a duplicate naming no turn
    turns = []
    for i in range(100):
        if i % 12 == 5 and len([t for t in turns if t.resolution() == "taken_on_timeout"]) < 8:
            turns.append(turn(i, Attempt(TIMED_OUT, at=1.0), Attempt(DEDUPLICATED, status=200, at=12.0)))
        else:
            turns.append(turn(i, accepted(i)))
    replies = [reply(t) for t in turns]
    # WHEN the books are made
    report = books(observe(turns, replies))
    # THEN the 8 are neither dropped nor foreign: their replies are theirs and every count adds up
    assert report["resolutions"] == {"accepted": 92, "taken_on_timeout": 8}
    assert report["webhooks"]["sent"] == 108
    assert (report["webhooks"]["timed_out"], report["webhooks"]["deduplicated"]) == (8, 8)
    assert report["fates"]["answered"] == 100 and report["answered"] == 100
    assert report["foreign_replies"] == 0 and report["replies"]["ours"] == 100
    assert report["ok"] is True, report["failures"]


def test_a_duplicate_answer_the_ingress_has_no_record_of_is_a_lost_turn():
    # GIVEN a turn whose attempt timed out and whose retry was called a duplicate, yet the
    # ingress holds no record of the event (the first attempt's publish failed after all)
    turns, replies = clean(5)
    turns.append(turn(5, Attempt(TIMED_OUT), Attempt(DEDUPLICATED, status=200), ingress=None))
    # WHEN the books are made
    report = books(observe(turns, replies))
    # THEN it is lost, not silently missing from the counts
    assert report["fates"]["lost"] == 1 and report["lost_turns"][0]["resolution"] == "unresolved"
    assert report["ok"] is False and "lost: 1" in report["failures"]


@pytest.mark.parametrize(
    ("attempts", "status_counts"),
    [
        ((Attempt(REFUSED, status=503), Attempt(REFUSED, status=503), Attempt(UNREACHABLE)), {"503": 2}),
        ((Attempt(TIMED_OUT), Attempt(REFUSED, status=401)), {"401": 1}),
    ],
)
def test_a_turn_never_taken_is_unaccepted_with_each_refusal_counted(attempts, status_counts):
    # GIVEN a turn every attempt of which was refused or unanswered, and nothing at the ingress
    turns, replies = clean(3)
    turns.append(turn(3, *attempts, ingress=None))
    # WHEN the books are made
    report = books(observe(turns, replies))
    # THEN the attempts are counted by outcome and status, and the turn is unaccepted
    assert report["webhooks"]["refused_by_status"] == status_counts
    assert report["webhooks"]["sent"] == 3 + len(attempts) and report["reconciliation"] == []
    assert report["fates"]["unaccepted"] == 1 and report["ok"] is False


def test_a_redelivery_taken_as_a_new_turn_and_a_reply_under_a_second_key_are_duplicates():
    # GIVEN one event the ingress took twice, and another turn answered under two keys
    turns, replies = clean(4)
    turns[1].attempts.append(Attempt(ACCEPTED, redelivery=True, status=200, turn_ids=("T1b",), at=3.0))
    replies.append(Reply("T1b", "T1b-0", turns[1].room, "暑いウル", 7.0))
    replies.append(reply(turns[2], key="T2-0-retry"))
    # WHEN the books are made
    report = books(observe(turns, replies))
    # THEN both are duplicated turns (the user saw two answers to each), and the counts still reconcile
    assert report["fates"]["duplicated"] == 2
    assert (report["duplicate_turns"], report["duplicate_replies"]) == (1, 2)
    assert report["reconciliation"] == [] and report["ok"] is False


def test_the_same_reply_resent_under_its_key_is_counted_but_not_a_duplicate():
    turns, replies = clean(3)
    replies.append(reply(turns[0], at=9.0))  # the same key again: the receiver drops it
    report = books(observe(turns, replies))
    assert report["resent_replies"] == 1 and report["duplicate_replies"] == 0
    assert report["ok"] is True, report["failures"]


@pytest.mark.parametrize(
    "stray",
    [
        Reply("T999", "T999-0", "soak-room-1", "はいウル", 4.0),  # answers no message we sent
        Reply("T2", "T2-0", "soak-room-6", "はいウル", 4.0),  # our turn's reply, in another conversation
    ],
)
def test_a_foreign_reply_fails_the_run(stray):
    turns, replies = clean(3)
    report = books(observe(turns, [*replies, stray]))
    assert report["foreign_replies"] == 1 and report["replies"]["received"] == 4
    assert report["reconciliation"] == [] and report["ok"] is False


def test_replies_the_run_did_not_attribute_break_the_reconciliation():
    turns, replies = clean(3)
    report = books(observe(turns, replies, received_replies=5))
    assert report["reconciliation"] and report["ok"] is False


def test_a_webhook_sent_but_not_recorded_breaks_the_reconciliation():
    turns, replies = clean(3)
    report = books(observe(turns, replies, sent=4))
    assert any("webhooks" in w for w in report["reconciliation"]) and report["ok"] is False


@pytest.mark.parametrize(
    ("found", "expected"),
    [
        ({"task": {"S0001xab12": 1}, "memory": {"S0002xab12": 1}}, None),
        ({"task": {}, "memory": {"S0002xab12": 1}}, "missing_effect_count: 1"),
        ({"task": {"S0001xab12": 2}, "memory": {"S0002xab12": 1}}, "duplicate_effects: 1"),
        (
            {"task": {"S0001xab12": 1, "S0000xab12": 1}, "memory": {"S0002xab12": 1}},
            "unexpected_effect_count: 1",
        ),
    ],
)
def test_every_planned_effect_exists_exactly_once_and_no_other(found, expected):
    # GIVEN turn 1 planned a task, turn 2 a memory, turn 0 nothing
    turns, replies = clean(3)
    turns[1].effect, turns[2].effect = "task", "memory"
    report = books(observe(turns, replies, effects=found))
    assert report["failures"] == ([] if expected is None else [expected])


def test_only_the_poisoned_turns_may_be_dead_lettered():
    # GIVEN turn 0 poisoned on purpose and dead-lettered without a reply
    turns, replies = clean(4)
    turns[0].poisoned = True
    replies = replies[1:]
    ok = books(observe(turns, replies, dead_letters={"T0": 1}))
    assert ok["fates"]["dead_lettered"] == 1 and ok["ok"] is True, ok["failures"]
    # WHEN another turn is dead-lettered too, or the poisoned one is not
    extra = books(observe(turns, replies, dead_letters={"T0": 1, "T2": 1}))
    none = books(observe(turns, replies, dead_letters={}))
    # THEN neither run is ok
    assert extra["unexpected_dead_letters"] == ["T2"] and extra["ok"] is False
    assert none["fates"]["lost"] == 1 and none["ok"] is False


def test_an_outage_of_every_peer_must_end_in_the_degraded_reply():
    turns, replies = clean(4)
    turns[1].fault, turns[1].must_degrade = "outage", True
    turns[2].fault = "failover"
    good = [r if r.turn_id != "T1" else reply(turns[1], text=DEGRADED) for r in replies]
    report = books(observe(turns, good))
    assert report["degraded_replies"] == 1 and report["ok"] is True, report["failures"]
    assert [(o["turn"], o["must_degrade"], o["degraded"]) for o in report["outages"]] == [
        (1, True, True),
        (2, False, False),
    ]
    assert report["unplanned_degraded"] == []
    # WHEN the outage's turn is answered as if nothing happened (a fallback absorbed the fault)
    absorbed = books(observe(turns, replies))
    assert absorbed["degraded_replies"] == 0 and absorbed["ok"] is False


def test_recovery_is_measured_only_for_kills_that_hit_a_turn_in_flight():
    turns, replies = clean(3)
    replies[1] = reply(turns[1], at=31.5)
    kills = [
        KillRecord("brain", at=20.0, hit=("T1",), restart_seconds=3.0),
        KillRecord("guardian", at=40.0, hit=(), waited_seconds=30.0, restart_seconds=2.5),
    ]
    report = books(observe(turns, replies, kills=kills))
    log = {k["layer"]: k for k in report["kill_log"]}
    assert (log["brain"]["in_flight"], log["brain"]["turns_hit"], log["brain"]["recovery_seconds"]) == (
        True,
        [1],
        11.5,
    )
    assert (log["guardian"]["in_flight"], log["guardian"]["recovery_seconds"]) == (False, None)
    assert report["recovery_seconds"] == {"max": 11.5, "median": 11.5}
    assert report["kills_in_flight"] == 1 and report["ok"] is True, report["failures"]


def test_kills_that_hit_nothing_in_flight_tested_nothing():
    turns, replies = clean(3)
    kills = [KillRecord("executor", at=5.0, waited_seconds=30.0, restart_seconds=2.0)]
    report = books(observe(turns, replies, kills=kills))
    assert report["recovery_seconds"] == {"max": None, "median": None}
    assert report["ok"] is False and "hit a turn in flight" in report["failures"][0]


def test_a_kill_whose_turn_is_never_answered_has_no_recovery_and_the_turn_is_lost():
    turns, replies = clean(3)
    replies = replies[:2]
    kills = [KillRecord("responder", at=5.0, hit=("T2",), restart_seconds=2.0)]
    report = books(observe(turns, replies, kills=kills))
    assert report["kill_log"][0]["recovery_seconds"] is None and report["lost"] == 1
    assert report["ok"] is False


def test_a_run_whose_llm_arm_was_rolled_back_is_not_ok():
    # GIVEN a clean run during which the rollback guard rolled the organisation back to legacy
    turns, replies = clean(3)
    report = books(
        observe(turns, replies), rolled_back="rollback-guard rolled demo back: llm_error_rate 0.12"
    )
    # THEN the plan's expected answers no longer hold, and the run says so
    assert report["ok"] is False and "rolled back" in report["failures"][0]


def test_a_planned_task_answered_with_a_degraded_reply_is_a_missing_effect_and_shown_as_unplanned():
    # GIVEN a task turn no fault was planned for, answered with the degraded reply (its budget spent)
    turns, replies = clean(3)
    turns[2].effect = "task"
    replies[2] = reply(turns[2], text=DEGRADED, at=61.0)
    # WHEN the books are made
    report = books(observe(turns, replies))
    # THEN the task is missing (the plan wanted it), and the degraded reply is listed with its times
    assert report["missing_effects"][0]["reply"] == DEGRADED[:80] and report["ok"] is False
    assert [(d["turn"], d["answered_at_seconds"]) for d in report["unplanned_degraded"]] == [(2, 61.0)]
