"""Announcements are delivered: each recipient once through the channel clients, with a receipt,
also under redelivery and a process killed mid-delivery; the reply says what really happened."""

from __future__ import annotations

from collections import Counter

import pytest
from tool_fakes import DEPARTMENTS, ORG, PEOPLE, Clock, docs, seed, turn_with

from shared_lib.brain.integration import failure_text, integrate
from shared_lib.demo_data import DEPARTMENT_NAMES, DEPARTMENT_READINGS
from shared_lib.features.approvals.steps import refused_before_asking
from shared_lib.layers import executor
from shared_lib.ports import OutboundReply, SendResult
from shared_lib.tools.directory import seed_directory
from shared_lib.wiring.composition import build_runtime

EVERYONE = len(PEOPLE)


class Crashing:
    """A channel client that sends ``fine`` messages, then raises (the process dies), unless healed."""

    name = "http"

    def __init__(self, fine: int, *, refuse: frozenset[str] = frozenset()) -> None:
        self.fine, self.refuse, self.sent = fine, refuse, list[OutboundReply]()

    def send(self, reply: OutboundReply) -> SendResult:
        if reply.user_id in self.refuse:
            return SendResult(ok=False, status=400, error="blocked_by_provider")
        if len(self.sent) >= self.fine:
            raise ConnectionResetError("killed mid-delivery")
        self.sent.append(reply)
        return SendResult(ok=True, provider_message_id=f"m{len(self.sent)}", status=200)


def addressed(people=PEOPLE, *, without=()):
    return [p if p["user_id"] in without else {**p, "channels": {"http": {}}} for p in people]


@pytest.fixture
def rt():
    runtime = build_runtime(
        {"CHARTER_ENV": "test", "CHARTER_LLM": "none", "CHARTER_CHANNELS": "recording"}, clock=Clock()
    )
    seed(runtime.store, people=addressed())
    return runtime


def announce_turn(tool="announce", params=None, turn_id="01TURNANNOUNCEAAAAAAAAAAAA"):
    return turn_with([(tool, params or {"message": "明日は10時から", "recipients": "all"})], turn_id=turn_id)


def sent(rt, channel="http"):
    return rt.channels[channel].sent


def test_given_n_recipients_when_announced_then_n_deliveries_each_once_with_receipts(rt):
    # GIVEN five people in the directory, each reachable on the plain-HTTP channel
    turn = announce_turn()
    # WHEN the announcement to everyone runs
    assert executor.run(turn, rt).outcome == "executed"
    # THEN each person got it once, under the key of (announcement, person), framed by the persona
    replies = sent(rt)
    assert sorted(r.user_id for r in replies) == sorted(p["user_id"] for p in PEOPLE)
    ann_id = turn.execution.results[0].result["announcement_id"]
    assert {r.idempotency_key for r in replies} == {f"{ann_id}-{p['user_id']}" for p in PEOPLE}
    assert all("鈴木一郎さんからのお知らせ" in r.text and "明日は10時から" in r.text for r in replies)
    # AND every recipient has a 'sent' receipt, and the outbox says delivered with counts
    receipts = docs(rt.store, "announcement_receipts")
    assert len(receipts) == EVERYONE and {d["status"] for d in receipts.values()} == {"sent"}
    outbox = docs(rt.store, "announcements")[ann_id]
    assert (outbox["status"], outbox["delivered_count"], outbox["failed_count"]) == ("delivered", EVERYONE, 0)
    assert turn.execution.results[0].result["delivery"]["delivered"] == EVERYONE


def test_given_a_delivered_announcement_when_the_turn_is_redelivered_then_still_n_deliveries(rt):
    executor.run(announce_turn(), rt)
    # WHEN Pub/Sub delivers the same executor step again
    again = announce_turn()
    executor.run(again, rt)
    # THEN the call replays from its receipt and nobody is sent to twice
    assert again.execution.results[0].replayed
    assert len(sent(rt)) == EVERYONE and len(docs(rt.store, "announcements")) == 1
    assert again.execution.results[0].result["delivery"] == {
        "status": "delivered",
        "recipients": EVERYONE,
        "delivered": EVERYONE,
        "failed": 0,
    }


def test_given_a_crash_after_k_sends_when_redelivered_then_n_in_total_and_no_duplicates(rt):
    # GIVEN a channel that dies after two of five sends
    crashing = Crashing(fine=2)
    rt.channels["http"] = crashing
    with pytest.raises(ConnectionResetError):
        executor.run(announce_turn(), rt)
    assert len(crashing.sent) == 2
    # WHEN the process is back and the same step is redelivered
    crashing.fine = 100
    turn = announce_turn()
    executor.run(turn, rt)
    # THEN the other three are sent to, nobody twice: five in total
    keys = Counter(r.idempotency_key for r in crashing.sent)
    assert len(keys) == EVERYONE and max(keys.values()) == 1
    assert turn.execution.results[0].result["delivery"]["delivered"] == EVERYONE


def test_given_the_reply_when_everyone_was_reached_then_it_says_how_many_were_reached(rt):
    turn = announce_turn()
    executor.run(turn, rt)
    text = integrate(turn, rt)
    assert text == f"{EVERYONE}人にアナウンスを届けたウル🐺" and "送った" not in text


def test_given_an_unreachable_recipient_when_announced_then_partial_and_the_reply_says_so(rt):
    # GIVEN one person without any address and one whose provider refuses the message
    seed(rt.store, people=addressed(without=("u-boss",)))
    rt.channels["http"] = Crashing(fine=100, refuse=frozenset({"u-yamada"}))
    turn = announce_turn("send_to_all", {"message": "年末年始のお知らせ"})
    executor.run(turn, rt)
    # THEN three are reached, two are counted failed (never skipped silently)
    summary = turn.execution.results[0].result["delivery"]
    assert (summary["status"], summary["delivered"], summary["failed"]) == ("partially_delivered", 3, 2)
    receipts = docs(rt.store, "announcement_receipts")
    assert [d.get("error") for d in receipts.values() if d["status"] == "failed"] == ["blocked_by_provider"]
    outbox = docs(rt.store, "announcements")[turn.execution.results[0].result["announcement_id"]]
    assert outbox["failures"] == {"u-boss": "no_address", "u-yamada": "blocked_by_provider"}
    # AND the reply says what happened
    text = integrate(turn, rt)
    assert "3人にアナウンスを届けた" in text and "2人には届けられなかった" in text


def test_given_nobody_reachable_when_announced_then_the_reply_never_says_sent(rt):
    seed(rt.store, people=PEOPLE)  # nobody has an address
    turn = announce_turn()
    executor.run(turn, rt)
    assert sent(rt) == [] and docs(rt.store, "announcements")[
        turn.execution.results[0].result["announcement_id"]
    ]["status"] == ("undelivered")
    text = integrate(turn, rt)
    assert "届けられなかった" in text and "送った" not in text and "届けたウル" not in text


def test_given_a_shadow_turn_when_announced_then_nothing_is_written_or_sent(rt):
    turn = announce_turn().model_copy(update={"shadow": True})
    executor.run(turn, rt)
    assert sent(rt) == [] and docs(rt.store, "announcements") == {}
    assert "delivery" not in turn.execution.results[0].result


@pytest.fixture
def named_rt(rt):
    seed_directory(rt.store, ORG, addressed(), DEPARTMENTS, DEPARTMENT_NAMES, DEPARTMENT_READINGS)
    return rt


# by its name, a part of it, or its reading typed in kana (「えいぎょうぶ」「ｴｲｷﾞｮｳ」)
@pytest.mark.parametrize(
    "said", ["営業部", "営業部のみんな", "営業", "営業部 ", "えいぎょうぶ", "ｴｲｷﾞｮｳ", "エイギョウのみんな"]
)
def test_given_a_department_when_announced_then_everyone_of_it_and_below_it_and_nobody_else(named_rt, said):
    # GIVEN 営業部 with 東日本営業課 under it, and 開発部 and 本社 beside
    turn = announce_turn(params={"message": "12/28(月)は大掃除です🧹 私物の持ち帰りを", "department": said})
    # WHEN the announcement to the department runs
    assert executor.run(turn, named_rt).outcome == "executed"
    # THEN the people of 営業部 and of 東日本営業課 got it, once each, and nobody of another department
    in_sales = {p["user_id"] for p in PEOPLE if p["department_id"] in ("d-sales", "d-sales-east")}
    assert sorted(r.user_id for r in sent(named_rt)) == sorted(in_sales)
    result = turn.execution.results[0].result
    assert result["recipient_count"] == len(in_sales) == 3


@pytest.mark.parametrize(
    ("params", "key", "said"),
    [
        (
            {"message": "大掃除", "department": "経理部"},
            "department_not_found",
            "「経理部」という部署は見つからなかった",
        ),
        (
            {"message": "大掃除", "department": "営業部", "recipients": ["田中"]},
            "recipients_mixed",
            "部署と名前を一緒には",
        ),
    ],
)
def test_given_a_department_it_cannot_take_when_announced_then_nothing_is_sent_and_the_user_is_told(
    named_rt, params, key, said
):
    turn = announce_turn(params=params)
    executor.run(turn, named_rt)
    [result] = turn.execution.results
    assert not result.ok and result.result["error_key"] == key and sent(named_rt) == []
    assert docs(named_rt.store, "announcements") == {}
    text = failure_text(named_rt.persona, result, named_rt.registry)
    assert said in text and "department" not in text and "recipients" not in text, text


@pytest.mark.parametrize(
    ("department", "refused"),
    [("営業部", None), ("営業", None), ("経理部", "「経理部」という部署は見つからなかった")],
)
def test_a_department_the_directory_does_not_hold_is_refused_before_the_question(
    named_rt, department, refused
):
    turn = announce_turn(params={"message": "明日は棚卸しです", "department": department})
    said = refused_before_asking(named_rt, turn.proposal.proposal.root, ORG)
    assert (said is None) if refused is None else (refused in str(said)), said
