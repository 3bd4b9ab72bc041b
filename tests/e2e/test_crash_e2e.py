"""Crashes on the local stack: a layer's worker SIGKILLed in the middle of a step (held in it
by the ``[[stall:LAYER]]`` fault marker) loses nothing and repeats nothing; a step that kills
every worker that takes it is dead-lettered without wedging the emulator."""

from __future__ import annotations

import concurrent.futures as cf
import os
import signal
import uuid
from pathlib import Path
from typing import Any

import pytest
from google.cloud import pubsub_v1

from infra import local_stack as stack_mod
from infra.emulators import process_alive
from shared_lib.delivery import idempotency
from shared_lib.delivery.topology import TOPOLOGY

ORG = "demo"
USER = "u-suzuki"
CHAIN = ("context", "brain", "guardian", "authorizer", "executor", "responder")
TASK = "田中さんに明日までに{tag}の見積書を作成するタスクをお願い"


def post(stack, text: str, room: str) -> str:
    resp = stack.send("http", text, org=ORG, room=room, user=USER)
    assert resp.status == 200, resp.body
    return str(resp.body["turn_ids"][0])


def replies(stack, room: str) -> list[dict[str, Any]]:
    return [
        s
        for s in stack.fake_channel_sent()
        if s.get("channel") == "http" and s["body"].get("room_id") == room
    ]


def tasks(stack, tag: str) -> list[dict[str, Any]]:
    return [d for _, d in stack.store.query(f"orgs/{ORG}/tasks") if tag in str(d.get("body", ""))]


def claim(stack, turn_id: str, layer: str) -> dict[str, Any] | None:
    return stack.store.get(idempotency.claim_path(ORG, turn_id, layer, 0))


RECORD_FIELDS = (
    "response_kind",
    "final_response",
    "response_sent",
    "arm",
    "output_type",
    "selected_tools",
    "guardian_action",
    "guardian_reason",
    "auth_result",
    "auth_reason",
    "execution_success",
    "execution_skipped_reason",
    "execution_error",
    "execution_result",
    "context_degraded",
    "errors",
    "queued_ms",
    "processing_ms",
    "backlogged",
    "step_count",
    "route",
    "loop",
)


def explain(stack, layer: str, turns: dict[str, str], rooms: dict[str, str], tags: dict[str, str]) -> str:
    """What a failing turn left behind: the replies' texts, its record (each layer's decision,
    degraded sources, budget and backlog), every layer's claim and the tasks of its tag."""
    turn_id, room, tag = turns[layer], rooms[layer], tags[layer]
    try:
        record = stack.record(ORG, turn_id)
    except AssertionError as exc:  # no record: say so, and show the rest
        record = {"missing": str(exc)}
    lines = [f"--- killed layer {layer}, turn {turn_id}, room {room}"]
    lines += [f"reply: {s.get('text') or s['body'].get('text')!r}" for s in replies(stack, room)]
    lines += [f"task: {d.get('status')} {d.get('body')!r}" for d in tasks(stack, tag)]
    for step in (0, 1):
        for la in CHAIN:
            if c := stack.store.get(idempotency.claim_path(ORG, turn_id, la, step)):
                lines.append(f"claim {la}#{step}: {c.get('status')} attempts={c.get('attempts')}")
    lines += [f"record.{k}: {record.get(k)!r}" for k in ("missing", *RECORD_FIELDS) if k in record]
    lines += [
        f"trail: {r.get('layer')} {r.get('outcome')} {r.get('reason_code')} {r.get('detail', '')}"
        for r in record.get("trail") or []
    ]
    return "\n".join(lines)


def kill_worker_holding(stack, turn_id: str, layer: str, seen: set[str]) -> list[int]:
    """Wait until a holder not in ``seen`` works on the step, then SIGKILL the layer's workers."""
    held = stack.wait_for(
        lambda: (
            (c := claim(stack, turn_id, layer))
            and c.get("status") == "in_progress"
            and c.get("holder") not in seen
            and c
        ),
        interval=0.1,
    )
    seen.add(held["holder"])
    comp = stack_mod.load_state(Path(stack.root))["components"][layer]
    workers = [w for w in stack_mod.workers(comp) if w != comp["pid"]]
    assert workers, f"{layer}: no gunicorn worker under {comp['pid']}"
    for worker in workers:
        os.kill(worker, signal.SIGKILL)
    return workers


@pytest.mark.e2e
def test_killing_each_chained_layers_worker_mid_step_answers_every_turn_exactly_once(local_stack):
    # GIVEN one task turn per chained layer, each held for a while inside that layer's step
    tags = {layer: f"K{uuid.uuid4().hex[:6]}" for layer in CHAIN}
    rooms = {layer: f"room-kill-{layer}-{tags[layer]}" for layer in CHAIN}
    turns = {
        layer: post(local_stack, f"[[stall:{layer}]] " + TASK.format(tag=tags[layer]), rooms[layer])
        for layer in CHAIN
    }
    # WHEN the worker of each layer is SIGKILLed while it holds that turn's claim
    with cf.ThreadPoolExecutor(max_workers=len(CHAIN)) as pool:
        killed = dict(
            zip(
                CHAIN,
                pool.map(lambda la: kill_worker_holding(local_stack, turns[la], la, set()), CHAIN),
                strict=True,
            )
        )
    # THEN every turn is answered exactly once and created its task exactly once
    for layer in CHAIN:
        local_stack.wait_for(lambda la=layer: replies(local_stack, rooms[la]), local_stack.budgets.after_kill)
    for layer in CHAIN:
        # (an assertion's message is only built when it fails)
        assert len(replies(local_stack, rooms[layer])) == 1, explain(local_stack, layer, turns, rooms, tags)
        assert len(tasks(local_stack, tags[layer])) == 1, explain(local_stack, layer, turns, rooms, tags)
        record = local_stack.record(ORG, turns[layer])
        assert record["execution_success"] is True, explain(local_stack, layer, turns, rooms, tags)
        assert not any(process_alive(w) for w in killed[layer]), layer
    # AND a conversation started afterwards is answered
    room = f"room-after-{uuid.uuid4().hex[:6]}"
    after = post(local_stack, "今日は暑いね", room)
    assert local_stack.record(ORG, after)["final_response"]
    local_stack.wait_for(lambda: replies(local_stack, room))


@pytest.mark.e2e
def test_a_step_that_kills_every_worker_is_dead_lettered_and_the_stack_keeps_answering(local_stack):
    # GIVEN a turn whose executor step is killed every time a worker takes it
    tag = f"P{uuid.uuid4().hex[:6]}"
    room = f"room-poison-{tag}"
    poison = post(local_stack, "[[stall:executor]] " + TASK.format(tag=tag), room)
    seen: set[str] = set()
    # WHEN its workers are killed more often than Pub/Sub delivers a message
    for _ in range(TOPOLOGY.retry.max_delivery_attempts):
        kill_worker_holding(local_stack, poison, "executor", seen)
    # THEN the next delivery dead-letters it (the observer records the failure and alerts)
    failure = local_stack.wait_for(
        lambda: [d for _, d in local_stack.store.query(f"orgs/{ORG}/failures") if d.get("turn_id") == poison],
        local_stack.budgets.after_kill,
    )
    assert failure[0]["produced_by"] == "authorizer"
    assert tasks(local_stack, tag) == [] and replies(local_stack, room) == []
    # AND the emulator still delivers: a new conversation, and a later turn of the same one, are answered
    fresh_room = f"room-fresh-{uuid.uuid4().hex[:6]}"
    fresh = post(local_stack, "今日は暑いね", fresh_room)
    later = post(local_stack, "ありがとう", room)
    assert local_stack.record(ORG, fresh)["final_response"]
    assert local_stack.record(ORG, later)["final_response"]
    local_stack.wait_for(lambda: replies(local_stack, fresh_room) and replies(local_stack, room))


@pytest.mark.e2e
def test_the_emulator_has_no_dead_letter_policy_on_ordered_subscriptions(local_stack):
    sub = pubsub_v1.SubscriberClient()
    for name, spec in TOPOLOGY.subscriptions.items():
        got = sub.get_subscription(subscription=sub.subscription_path(local_stack.project, name))
        has_policy = bool(got.dead_letter_policy.dead_letter_topic)
        assert has_policy == (spec.dead_letter and not spec.ordered), name
