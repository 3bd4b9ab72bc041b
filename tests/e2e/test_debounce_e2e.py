"""The debounce (seed 001 §7.3) end to end on a local stack whose plain-HTTP channel has a
2-second window (``CHARTER_DEBOUNCE``; by default HTTP is not debounced): five messages from one
person in one room within two seconds become one turn with all five texts and one reply, and a
message alone is answered after at most the window. The delay the debounce adds is read from
the turn's trail (``waited_ms`` of the context layer), never from wall-clock timing; every wait
takes its deadline from the stack's budgets (``tests/e2e/waits.py``), and "no second reply" is
read once every turn of the burst is settled (its record written, the leader's responder claim
completed), never after a fixed pause."""

from __future__ import annotations

import itertools
import json
import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from infra.emulators import Emulators
from shared_lib.features.debounce import state as debounce
from tests.e2e.conftest import LocalStack, started_stack

ORG, USER = "demo", "u-suzuki"
WINDOW_MS = 2000.0
TEXTS = ["お疲れさまです", "明日の会議なんですが", "10時からに", "変更になりました", "よろしくお願いします"]
WAITED = re.compile(r"debounce=(\w+):(\d+) waited_ms=([\d.]+)")


@pytest.fixture(scope="module")
def debounced_stack(tmp_path_factory: pytest.TempPathFactory, emulators: Emulators) -> Iterator[LocalStack]:
    """A stack of its own (the debounce window is a setting of every function), on the session's
    emulators in a project of its own."""
    debounce_env = {"CHARTER_DEBOUNCE": json.dumps({"http": WINDOW_MS / 1000})}
    with started_stack(tmp_path_factory, emulators, "debounce", extra_env=debounce_env) as stack:
        yield stack


def post(stack: LocalStack, text: str, room: str) -> str:
    resp = stack.send("http", text, org=ORG, room=room, user=USER)
    assert resp.status == 200, resp.body
    return str(resp.body["turn_ids"][0])


def replies(stack: LocalStack, room: str) -> list[dict[str, Any]]:
    return [s for s in stack.fake_channel_sent() if s.get("channel") == "http" and room in str(s.get("body"))]


def context_row(record: dict[str, Any]) -> dict[str, Any]:
    return next(row for row in record["trail"] if row["layer"] == "context")


def settled(stack: LocalStack, turn_ids: list[str]) -> list[dict[str, Any]]:
    """Every turn's record once the burst is over: each merged turn recorded, and the leader's
    reply sent with its responder claim completed (a second reply, were there one, is sent by then)."""
    records = [stack.record(ORG, t) for t in turn_ids]
    for t, record in zip(turn_ids, records, strict=True):
        if record["response_kind"] != "merged":
            stack.wait_for(
                lambda t=t: "responder:completed" in stack.claims(ORG, t),
                what=f"the responder's claim of {t} completed",
            )
    return records


@pytest.mark.e2e
def test_one_message_alone_is_answered_after_at_most_the_window(debounced_stack):
    stack, room = debounced_stack, f"room-{uuid.uuid4().hex[:8]}"
    turn_id = post(stack, "こんにちは", room)
    record = stack.record(ORG, turn_id)
    role, count, waited = WAITED.search(context_row(record)["detail"]).groups()  # type: ignore[union-attr]
    assert (role, int(count)) == ("leader", 1)
    # what the debounce added: the rest of the window (none when the turn reached the context
    # layer after it, as a first turn on a cold stack may)
    assert 0.0 <= float(waited) <= WINDOW_MS
    assert record["response_kind"] != "merged" and record["response_sent"]
    stack.wait_for(lambda: replies(stack, room))
    assert len(replies(stack, room)) == 1


@pytest.mark.e2e
def test_five_messages_within_two_seconds_become_one_turn_with_all_five_texts_and_one_reply(debounced_stack):
    stack, room = debounced_stack, f"room-{uuid.uuid4().hex[:8]}"
    turn_ids = [post(stack, text, room) for text in TEXTS]
    # the burst as the ingress stamped it: five messages, each within the window of the one before
    # (what makes a burst for the debounce; sent one after another, on a quiet machine all five
    # land within two seconds, on a busy one each acknowledgement takes longer)
    buffer = debounce.entries(stack.store, debounce.buffer_path(ORG, "http", room, USER))
    stamped = sorted(e["at"] for e in buffer)
    gaps = [(later - earlier).total_seconds() for earlier, later in itertools.pairwise(stamped)]
    assert len(stamped) == 5 and max(gaps) < WINDOW_MS / 1000, gaps
    leader = stack.record(ORG, turn_ids[-1])
    assert leader["input_message"] == "\n".join(TEXTS)
    role, count, waited = WAITED.search(context_row(leader)["detail"]).groups()  # type: ignore[union-attr]
    assert (role, int(count)) == ("leader", 5)
    assert float(waited) <= WINDOW_MS
    for earlier, later in itertools.pairwise(turn_ids):
        record = stack.record(ORG, earlier)
        assert record["response_kind"] == "merged"
        assert [row["layer"] for row in record["trail"]] == ["context"]
        assert context_row(record)["detail"] == f"merged_into={later}"
    settled(stack, turn_ids)
    stack.wait_for(lambda: replies(stack, room))
    assert len(replies(stack, room)) == 1


@pytest.mark.e2e
def test_five_webhooks_arriving_at_once_become_one_turn_and_every_webhook_is_acknowledged(debounced_stack):
    # GIVEN five webhooks of one person in one room sent concurrently (a provider delivering a
    # burst in parallel): each is acknowledged (post raises on a timeout or an error status)
    import concurrent.futures as cf

    stack, room = debounced_stack, f"room-{uuid.uuid4().hex[:8]}"
    with cf.ThreadPoolExecutor(max_workers=5) as pool:
        turn_ids = list(pool.map(lambda text: post(stack, text, room), TEXTS))
    # THEN exactly one turn carries all five texts (in the order the ingress stamped them), the
    # four others are merged into it, and one reply is sent
    records = settled(stack, turn_ids)
    leaders = [r for r in records if r["response_kind"] != "merged"]
    assert len(leaders) == 1, [r["response_kind"] for r in records]
    assert sorted(leaders[0]["input_message"].split("\n")) == sorted(TEXTS)
    stack.wait_for(lambda: replies(stack, room))
    assert len(replies(stack, room)) == 1


# A person who splits a request: the issue's 「田中さんに明日までに」, 3 s, 「見積書作成のタスクをお願い」.
PAUSE_S = 3.0
WARM_UP = ["お疲れさまです！", "今日の件なんですが", "やっぱ明日にします", "よろしくです🙏"]
SPLIT = ["田中さんに明日までに", "見積書作成のタスクをお願い"]
# a task with a date already past: the charter confirms it once (date.past)
ASK = "田中さんに2020-01-10までに見積書を作成するタスクをお願い"


def pause_as_typed() -> None:
    """The person's pause between two parts of what they write: the input under test (how they
    type), not a wait for the stack (those are ``stack.wait_for``, from the budgets)."""
    import time

    time.sleep(PAUSE_S)


def with_rhythm(stack: LocalStack, room: str) -> int:
    """The person's earlier messages, each typed 3 s after the one before (the default window
    is shorter than their pause): their rhythm is in the pace once they are answered. The
    number of replies they got."""
    turn_ids = []
    for n, text in enumerate(WARM_UP):
        if n:
            pause_as_typed()
        turn_ids.append(post(stack, text, room))
    answered = sum(r["response_kind"] != "merged" for r in settled(stack, turn_ids))
    stack.wait_for(lambda: len(replies(stack, room)) >= answered, what="the earlier messages answered")
    return answered


@pytest.mark.e2e
def test_a_three_second_split_request_is_answered_once_when_the_sender_pauses_like_that(debounced_stack):
    stack, room = debounced_stack, f"room-{uuid.uuid4().hex[:8]}"
    before = with_rhythm(stack, room)
    # the pauses as the ingress stamped them: longer than the channel's 2-second default
    stamped = sorted(
        e["at"] for e in debounce.entries(stack.store, debounce.buffer_path(ORG, "http", room, USER))
    )
    assert min((b - a).total_seconds() for a, b in itertools.pairwise(stamped)) >= PAUSE_S
    # WHEN the person splits a request with the same pause
    first = post(stack, SPLIT[0], room)
    pause_as_typed()
    second = post(stack, SPLIT[1], room)
    # THEN one turn carries both parts, in order, and one reply answers it
    records = settled(stack, [first, second])
    assert records[0]["response_kind"] == "merged"
    leader = stack.record(ORG, second)
    assert leader["input_message"] == "\n".join(SPLIT)
    detail = context_row(leader)["detail"]
    role, count, _ = WAITED.search(detail).groups()  # type: ignore[union-attr]
    assert (role, int(count)) == ("leader", 2)
    window_ms = float(re.search(r"window_ms=([\d.]+)", detail).group(1))  # type: ignore[union-attr]
    assert PAUSE_S * 1000 < window_ms <= 5000.0
    stack.wait_for(lambda: len(replies(stack, room)) > before)
    assert len(replies(stack, room)) == before + 1


@pytest.mark.e2e
def test_a_yes_to_a_pending_confirmation_is_answered_at_once_while_the_senders_window_is_long(
    debounced_stack,
):
    stack, room = debounced_stack, f"room-{uuid.uuid4().hex[:8]}"
    with_rhythm(stack, room)
    asked = post(stack, ASK, room)
    assert stack.record(ORG, asked)["response_kind"] == "confirm"
    # WHEN the person says はい and, right after, something else
    yes = post(stack, "はい", room)
    after = post(stack, "あ、あと今日は早めに上がります", room)
    # THEN the yes went on at once, alone, and answered the question
    answer = stack.record(ORG, yes)
    role, count, waited = WAITED.search(context_row(answer)["detail"]).groups()  # type: ignore[union-attr]
    assert (role, int(count), float(waited)) == ("answer", 1, 0.0)
    assert answer["input_message"] == "はい" and answer["response_kind"] != "merged"
    assert answer["execution_success"] is True
    # AND the message after it is a turn of its own, which waited out the person's long window
    later = stack.record(ORG, after)
    detail = context_row(later)["detail"]
    role, count, _ = WAITED.search(detail).groups()  # type: ignore[union-attr]
    assert (role, int(count)) == ("leader", 1) and later["input_message"] == "あ、あと今日は早めに上がります"
    assert float(re.search(r"window_ms=([\d.]+)", detail).group(1)) > PAUSE_S * 1000  # type: ignore[union-attr]
    settled(stack, [yes, after])
