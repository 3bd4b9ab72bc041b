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
