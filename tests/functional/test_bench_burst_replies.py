"""The burst's senders read the replies at the fake channel API incrementally: each poll asks for
what came since the last one, so sixteen senders waiting for their confirmation questions do not
spend the machine the product is measured on re-reading every reply (the floor's harness is told
of each arrival). What they find is what a full read finds."""

from __future__ import annotations

import threading
import time

import httpx

from infra.bench.burst import Stack
from infra.fake_channels import FakeChannelServer


def _reply(client: httpx.Client, turn_id: str, text: str) -> None:
    client.post(
        "/http/reply",
        json={"text": text, "turn_id": f"{turn_id}-0", "room_id": "r1"},
        headers={"Idempotency-Key": f"{turn_id}-0"},
    )


def test_senders_find_their_replies_reading_each_once() -> None:
    with FakeChannelServer() as fake, httpx.Client(base_url=fake.url) as client:
        stack = Stack(
            {"ingress_url": "http://127.0.0.1:9", "components": {"fake_channels": {"url": fake.url}}}
        )
        # GIVEN two replies already there, and a third that comes while senders wait
        _reply(client, "t1", "了解ウル🐺")
        _reply(client, "t2", "大事な操作なので2回確認するウル🐺（1回目）")
        found: dict[str, str] = {}

        def wait(turn_id: str) -> None:
            call = stack.reply_to(turn_id, deadline=time.time() + 30)
            found[turn_id] = call["text"] if call else ""

        waiters = [threading.Thread(target=wait, args=(t,)) for t in ("t1", "t2", "t3")]
        for w in waiters:
            w.start()
        _reply(client, "t3", "月曜の夜もおつかれさまウル！")
        for w in waiters:
            w.join(30)
        # THEN each sender found its own reply
        assert found == {
            "t1": "了解ウル🐺",
            "t2": "大事な操作なので2回確認するウル🐺（1回目）",
            "t3": "月曜の夜もおつかれさまウル！",
        }
        # AND the replies read incrementally are exactly the full list, each once, in order
        assert [c["text"] for c in stack.replies()] == [c["text"] for c in fake.sent("http")]
