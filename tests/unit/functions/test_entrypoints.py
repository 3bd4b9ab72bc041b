"""The entrypoints of ``functions/`` through functions-framework's own app and test client,
as Cloud Run serves them: the HTTP ingress and every Pub/Sub push (CloudEvent) target.

A turn walks the chain the way Pub/Sub would carry it: each target's delivery is the
message the previous target published on the runtime's in-process bus (nothing is wired
to it, so each hop happens only through a test-client request).
"""

from __future__ import annotations

import base64
import gc
import hashlib
import hmac
import json
import os
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import flask.testing
import functions_framework
import pytest

from infra.webhook_sender import build_request
from shared_lib.channels.secrets import ChannelSecrets
from shared_lib.delivery import idempotency
from shared_lib.delivery.topology import TOPOLOGY
from shared_lib.layers.memory import job_message
from shared_lib.runtime import Runtime
from shared_lib.tools.directory import seed_directory
from shared_lib.turn.envelope import Turn
from shared_lib.wiring import push
from shared_lib.wiring.composition import LAYERS

SOURCE = str(Path(__file__).resolve().parents[3] / "functions" / "main.py")
SECRET = "entrypoint-test-secret"
TEXT = "田中さんに明日までに見積書のタスクをお願い"
# the served chain, then the targets fed by a topic of that chain
CHAIN = ["context", "brain", "guardian", "authorizer", "executor", "responder"]
BRANCHES = {"brain_shadow": "context", "observer": "responder", "memory": "responder"}
CLOUDEVENT_TARGETS = [n for n, t in TOPOLOGY.targets.items() if t.kind == "cloudevent"]
Message = tuple[str, bytes, dict[str, str], str]


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The embedded adapters, and a fresh process-wide runtime for each test (the root
    conftest restores ``os.environ`` afterwards, as functions-framework's own tests do)."""
    for key, value in {
        "CHARTER_ENV": "test",
        "CHARTER_STORE": "memory",
        "CHARTER_BUS": "inproc",
        "CHARTER_LLM": "none",
        "CHARTER_CHANNELS": "recording",
        "HTTP_WEBHOOK_SECRET": SECRET,
    }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("CHARTER_DEADLETTER_FALLBACK", raising=False)
    monkeypatch.setattr(push, "_runtime", None)
    yield
    push._runtime = None
    gc.unfreeze()  # a served process keeps what it built at start frozen; a test process does not


def client(target: str) -> flask.testing.FlaskClient:
    return functions_framework.create_app(target=target, source=SOURCE).test_client()


def runtime() -> Runtime:
    assert push._runtime is not None, "no request has built the process runtime yet"
    return push._runtime


def published_since(start: int) -> list[Message]:
    return list(runtime().bus.published[start:])  # type: ignore[attr-defined]


def webhook(text: str = TEXT) -> tuple[str, dict[str, str], bytes]:
    # the plain-HTTP sender must be a person of the organisation's directory (else 403)
    seed_directory(push.get_runtime().store, "default", [{"user_id": "user-1", "name": "試験太郎"}], {})
    return build_request("http", text, secrets=ChannelSecrets.from_env(os.environ))


def test_a_served_process_sets_what_it_built_at_start_apart_from_the_collector(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN a fresh process with nothing frozen
    gc.unfreeze()
    assert gc.get_freeze_count() == 0
    # WHEN its first delivery builds the runtime
    rt = push.get_runtime()
    # THEN what it built (the runtime among it) is frozen: a full collection no longer walks it
    assert gc.get_freeze_count() > 1000
    # AND only once: a later delivery reuses the runtime and freezes nothing more. Counted by the
    # calls: the permanent generation's size, read twice, once differed by 48 objects in a
    # parallel test worker, the cause not found
    freezes: list[int] = []
    monkeypatch.setattr(gc, "freeze", lambda: freezes.append(1))
    assert push.get_runtime() is rt
    assert freezes == []


def push_body(message: Message, *, message_id: str = "1") -> dict[str, Any]:
    """A Pub/Sub push delivery of ``message`` (the body Pub/Sub posts)."""
    _, data, attributes, _ = message
    return {
        "message": {
            "data": base64.b64encode(data).decode(),
            "attributes": attributes,
            "messageId": message_id,
            "publishTime": "2028-02-29T00:00:00Z",
        },
        "subscription": "projects/charter-local/subscriptions/test-sub",
    }


CE_ATTRIBUTES = {
    "specversion": "1.0",
    "type": "google.cloud.pubsub.topic.v1.messagePublished",
    "source": "//pubsub.googleapis.com/projects/charter-local/topics/test",
}


def post_binary(target: str, body: Any, *, event_id: str = "1") -> Any:
    """A binary-mode CloudEvent: attributes in ``ce-*`` headers, the push body as data."""
    headers = {f"ce-{k}": v for k, v in CE_ATTRIBUTES.items()} | {"ce-id": event_id}
    return client(target).post("/", headers=headers, json=body)


def post_structured(target: str, body: Any) -> Any:
    event = {**CE_ATTRIBUTES, "id": "1", "datacontenttype": "application/json", "data": body}
    return client(target).post(
        "/", data=json.dumps(event), headers={"Content-Type": "application/cloudevents+json"}
    )


def post_raw_push(target: str, body: Any) -> Any:
    """No CloudEvent at all: functions-framework converts a raw push body itself."""
    return client(target).post("/", json=body)


def accepted_turn() -> Message:
    """POST a signed webhook to ingress; the message it published on ``turns.received``."""
    path, headers, body = webhook()
    response = client("ingress").post(path, headers=headers, data=body)
    assert response.status_code == 200, response.get_data(as_text=True)
    [message] = published_since(0)
    assert message[0] == "received"
    return message


def walk_to(target: str) -> tuple[Message, dict[str, Message]]:
    """Carry a new turn along the chain up to ``target``; its delivery and every topic's latest."""
    latest = {"received": accepted_turn()}
    stop = BRANCHES.get(target, target)
    for hop in CHAIN[: CHAIN.index(stop) + (1 if target in BRANCHES else 0)]:
        start = len(runtime().bus.published)
        assert post_binary(hop, push_body(latest[topic_of(hop)])).status_code == 200
        latest.update({m[0]: m for m in published_since(start)})
    return latest[topic_of(target)], latest


def topic_of(target: str) -> str:
    """The topic key the target's (first) subscription reads."""
    if target == "observer":
        return "completed"
    return next(s.topic for s in TOPOLOGY.subscriptions.values() if s.target == target)


def claims(message: Message, target: str) -> bool:
    """Whether the target runs this delivery under a claim (``Layer.claimed``, ``needs_claim``)."""
    layer = LAYERS[target]
    turn = Turn.from_message(message[1], message[2], runtime().store)
    return layer.claimed and (layer.needs_claim is None or layer.needs_claim(turn, runtime()))


def claim(message: Message, target: str) -> dict[str, Any] | None:
    _, data, attributes, _ = message
    turn = Turn.from_message(data, attributes, runtime().store)
    layer = LAYERS[target].name
    return runtime().store.get(
        idempotency.claim_path(turn.org_id, turn.turn_id, layer, turn.step, shadow=turn.shadow)
    )


# --- (a) the HTTP ingress ---------------------------------------------------------------


def test_a_correctly_signed_http_webhook_is_accepted_and_published():
    path, headers, body = webhook()
    response = client("ingress").post(path, headers=headers, data=body)
    assert response.status_code == 200
    assert response.get_json()["accepted"] == 1
    [(topic, data, attributes, _)] = published_since(0)
    assert topic == "received"
    assert Turn.from_message(data, attributes, runtime().store).inbound.text == TEXT


def test_a_forged_signature_is_401_and_publishes_nothing():
    path, headers, body = webhook()
    forged = hmac.new(b"not-the-secret", f"{headers['X-Charter-Timestamp']}.".encode() + body, hashlib.sha256)
    headers["X-Charter-Signature"] = f"sha256={forged.hexdigest()}"
    response = client("ingress").post(path, headers=headers, data=body)
    assert (response.status_code, response.get_json()["error"]) == (401, "unauthorized")
    assert published_since(0) == []


def test_a_signed_body_that_is_not_json_is_400():
    path, headers, _ = webhook()
    body = b"this is not json"
    stamp = headers["X-Charter-Timestamp"]
    digest = hmac.new(SECRET.encode(), f"{stamp}.".encode() + body, hashlib.sha256).hexdigest()
    headers["X-Charter-Signature"] = f"sha256={digest}"
    response = client("ingress").post(path, headers=headers, data=body)
    assert (response.status_code, response.get_json()["error"]) == (400, "malformed_json")
    assert published_since(0) == []


def test_an_oversized_body_is_413():
    path, headers, _ = webhook()
    body = b"{" + b" " * (256 * 1024) + b"}"
    response = client("ingress").post(path, headers=headers, data=body)
    assert (response.status_code, response.get_json()["error"]) == (413, "body_too_large")
    assert published_since(0) == []


def test_health_and_unknown_paths():
    app = client("ingress")
    assert app.get("/healthz").status_code == 200
    assert app.post("/webhooks").status_code == 404


# --- (b) the CloudEvent targets ---------------------------------------------------------


def test_every_cloudevent_target_of_the_topology_is_covered_here():
    assert sorted(CLOUDEVENT_TARGETS) == sorted([*CHAIN, *BRANCHES])


@pytest.mark.parametrize("target", CLOUDEVENT_TARGETS)
def test_each_cloudevent_target_answers_a_pubsub_push_with_2xx_and_does_its_work(target: str):
    # GIVEN the message the previous target published for a new turn
    delivery, _ = walk_to(target)
    start = len(runtime().bus.published)
    # WHEN Pub/Sub pushes it to the target as a binary CloudEvent
    response = post_binary(target, push_body(delivery))
    # THEN it is acknowledged and the turn moved on
    assert 200 <= response.status_code < 300, response.get_data(as_text=True)
    if target == "observer":
        turn = Turn.from_message(delivery[1], delivery[2], runtime().store)
        assert runtime().store.get(f"orgs/{turn.org_id}/observability/{turn.turn_id}") is not None
    elif target == "memory":  # a short conversation needs no compaction; a job message runs once
        turn = Turn.from_message(delivery[1], delivery[2], runtime().store)
        data, attributes = job_message("compact", turn.org_id, "compact-1")
        assert 200 <= post_binary(target, push_body(("memory", data, attributes, ""))).status_code < 300
        done = runtime().store.get(f"orgs/{turn.org_id}/memory_jobs/compact-1") or {}
        assert done.get("status") == "done" and done["result"]["conversations"] == 1
    elif claims(delivery, target):
        assert (claim(delivery, target) or {}).get("status") == "completed"
    else:  # a stage without a claim (issue 39): its work is the next topic's message, below, or
        # nothing at all (the shadow brain on a turn it does not sample)
        assert claim(delivery, target) is None
    if target in CHAIN[:-1]:
        following = CHAIN[CHAIN.index(target) + 1]
        assert topic_of(following) in [m[0] for m in published_since(start)]


@pytest.mark.parametrize("target", CHAIN)
def test_a_redelivered_push_is_acknowledged_and_repeats_nothing(target: str):
    delivery, _ = walk_to(target)
    assert post_binary(target, push_body(delivery)).status_code == 200

    # (a stage without a claim, issue 39, publishes again on a redelivery: the first delivery's
    # message is carried on to the first stage after it that claims, as Pub/Sub would)
    def chained(since: int) -> list[Message]:  # what a stage published on, its alerts left out
        return [m for m in published_since(since) if m[0] != "events"]

    first, hop = chained(0)[-1], target
    while not LAYERS[hop].claimed:
        hop = CHAIN[CHAIN.index(hop) + 1]
        start = len(runtime().bus.published)
        assert post_binary(hop, push_body(first)).status_code == 200
        first = chained(start)[0]
    start = len(runtime().bus.published)
    assert post_binary(target, push_body(delivery), event_id="2").status_code == 200
    # a stage without a claim decides again and publishes the same turn and step under the same
    # ordering key; the first stage after it that claims takes it as a duplicate
    while not LAYERS[target].claimed:
        [again] = chained(start)
        assert (again[2]["turn_id"], again[2]["step"], again[3]) == (
            delivery[2]["turn_id"],
            delivery[2]["step"],
            delivery[3],
        )
        target = CHAIN[CHAIN.index(target) + 1]
        start = len(runtime().bus.published)
        assert post_binary(target, push_body(again), event_id="2").status_code == 200
    assert published_since(start) == []


@pytest.mark.parametrize("post", [post_binary, post_structured, post_raw_push])
def test_binary_structured_and_raw_push_deliveries_are_all_understood(post):
    received = accepted_turn()
    response = post("context", push_body(received))
    assert response.status_code == 200, response.get_data(as_text=True)
    assert [m[0] for m in published_since(1)] == ["contextualized"]


# --- malformed pushes -------------------------------------------------------------------
# push.py lets every failure propagate: functions-framework answers 500, Pub/Sub redelivers
# and, after max_delivery_attempts, dead-letters. The tests' names say what each answers.


def test_a_body_that_is_neither_a_cloudevent_nor_a_push_is_400_from_functions_framework():
    assert post_raw_push("context", {"hello": "world"}).status_code == 400


@pytest.mark.parametrize("target", ["context", "observer"])
@pytest.mark.parametrize(
    "body",
    [
        {"hello": "world"},  # a CloudEvent whose data is not a push delivery
        {"message": {"data": "%%% not base64 %%%", "messageId": "9"}},
        {"message": {"data": base64.b64encode(b"not an envelope").decode(), "messageId": "9"}},
    ],
    ids=["not_a_push", "not_base64", "not_an_envelope"],
)
def test_a_malformed_push_is_500_so_pubsub_redelivers_then_dead_letters(target: str, body: Any):
    response = post_binary(target, body)
    assert response.status_code == 500
    assert published_since(0) == []


def test_with_the_deadletter_fallback_an_undecodable_envelope_is_dead_lettered_on_the_last_attempt(
    monkeypatch: pytest.MonkeyPatch,
):
    # GIVEN the local stack's fallback (its emulator never dead-letters ordered subscriptions)
    monkeypatch.setenv("CHARTER_DEADLETTER_FALLBACK", "1")
    body = {"message": {"data": base64.b64encode(b"not an envelope").decode(), "messageId": "poison"}}
    attempts = TOPOLOGY.retry.max_delivery_attempts
    # WHEN Pub/Sub keeps redelivering it
    statuses = [post_binary("context", body, event_id=str(n)).status_code for n in range(attempts)]
    # THEN it fails until the last allowed attempt, which dead-letters it and acknowledges
    assert statuses == [500] * (attempts - 1) + [200]
    [(topic, data, attributes, _)] = published_since(0)
    assert (topic, data) == ("deadletter", b"not an envelope")
    assert attributes["CloudPubSubDeadLetterSourceDeliveryCount"] == str(attempts)


def test_with_the_deadletter_fallback_a_push_whose_data_is_not_base64_is_still_500_on_every_attempt(
    monkeypatch: pytest.MonkeyPatch,
):
    # decode_push fails before the fallback counts the delivery: on the emulator (which never
    # dead-letters ordered subscriptions) such a message would be redelivered forever
    monkeypatch.setenv("CHARTER_DEADLETTER_FALLBACK", "1")
    body = {"message": {"data": "%%% not base64 %%%", "messageId": "poison"}}
    attempts = TOPOLOGY.retry.max_delivery_attempts
    statuses = [post_binary("context", body, event_id=str(n)).status_code for n in range(attempts + 1)]
    assert statuses == [500] * (attempts + 1)
    assert published_since(0) == []


def test_with_the_deadletter_fallback_a_step_whose_every_holder_died_is_dead_lettered_at_once(
    monkeypatch: pytest.MonkeyPatch,
):
    # GIVEN the local stack's fallback, and an executor step (a stage that claims: the guardian no
    # longer does, issue 39) that Pub/Sub delivered as often as it may, each time to a worker that
    # was killed holding the claim (nothing answered: nothing counted)
    monkeypatch.setenv("CHARTER_DEADLETTER_FALLBACK", "1")
    delivery, _ = walk_to("executor")
    store = runtime().store
    _, data, attributes, _ = delivery
    turn = Turn.from_message(data, attributes, store)
    path = idempotency.claim_path(turn.org_id, turn.turn_id, "executor", turn.step)
    dead = {"status": "in_progress", "attempts": TOPOLOGY.retry.max_delivery_attempts, "holder": "killed"}
    store.set(path, {**dead, "lease_until": runtime().clock() - timedelta(seconds=1)})
    start = len(runtime().bus.published)
    # WHEN it is delivered once more
    response = post_binary("executor", push_body(delivery))
    # THEN that delivery dead-letters it (and acknowledges) instead of starting the step again
    assert response.status_code == 200
    [(topic, _, dl_attributes, _)] = published_since(start)
    assert topic == "deadletter" and dl_attributes["turn_id"] == turn.turn_id
