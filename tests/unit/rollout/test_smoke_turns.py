"""Smoke turns: the signed smoke header, the twin topics, and the revision each layer records."""

from __future__ import annotations

import json
from typing import Any

import pytest

from infra.webhook_sender import build_request
from shared_lib.delivery.topology import TOPOLOGY
from shared_lib.errors import CharterError
from shared_lib.layers.base import Outcome
from shared_lib.layers.ingress import handle_http
from shared_lib.rollout.guard import RollbackGuard
from shared_lib.rollout.smoke import SMOKE_HEADER, SmokeSignatureError, is_smoke, sign
from shared_lib.runtime import Runtime
from shared_lib.settings import Settings
from shared_lib.tools.directory import seed_directory
from shared_lib.turn.envelope import Turn
from shared_lib.wiring.composition import build_runtime, runner, wire_inprocess

ORG = "acme"
CHAIN_LAYERS = ["context", "brain", "guardian", "authorizer", "executor", "responder"]


class CountingGuard(RollbackGuard):
    """A rollback guard that only counts what the observer shows it."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[dict[str, Any]] = []

    def observe(
        self, rt: Any, record: dict[str, Any], compared: dict[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        self.seen.append(record)
        return []


def runtime(revision: str = "charter-x-c-abc1234", **env: str) -> Runtime:
    rt = build_runtime(
        {
            "CHARTER_ENV": "test",
            "CHARTER_LLM": "none",
            "CHARTER_CHANNELS": "recording",
            "CHARTER_REVISION": revision,
            **env,
        },
        rollback_guard=CountingGuard(),
    )
    wire_inprocess(rt)
    seed_directory(
        rt.store,
        ORG,
        [{"user_id": "u1", "name": "鈴木一郎", "level": 2, "department_id": "d1"}],
        {"d1": None},
    )
    return rt


def post(rt: Runtime, text: str, *, smoke: bool, event_id: str, **changes: str) -> tuple[int, dict[str, Any]]:
    _, headers, body = build_request(
        "http",
        text,
        org=ORG,
        room="r1",
        user="u1",
        event_id=event_id,
        smoke=smoke,
        secrets=rt.channel_secrets,
    )
    headers.update(changes)
    return handle_http(rt, "http", "POST", headers, {}, body)


def topics_of(rt: Runtime, turn_id: str) -> list[str]:
    return [topic for topic, _, attrs, _ in rt.bus.published if attrs.get("turn_id") == turn_id]  # type: ignore[attr-defined]


# -- the topology's twins --------------------------------------------------------------------


def test_route_sends_a_smoke_turn_to_the_twin_and_leaves_dead_letters_alone():
    # GIVEN the topology WHEN a topic is routed for a normal and a smoke turn
    # THEN a normal turn keeps every key, a smoke turn gets the twin of every twinned key
    for key in TOPOLOGY.topics:
        assert TOPOLOGY.route(key, smoke=False) == key
    for key in TOPOLOGY.smoke.topics:
        twin = TOPOLOGY.route(key, smoke=True)
        assert twin != key and TOPOLOGY.topic(twin) == "smoke." + TOPOLOGY.topic(key)
    assert TOPOLOGY.route("deadletter", smoke=True) == "deadletter"


def test_every_subscription_a_turn_passes_has_a_smoke_twin_with_the_same_target():
    # GIVEN the chain's subscriptions on twinned topics
    chain = {n: s for n, s in TOPOLOGY.subscriptions.items() if s.topic in TOPOLOGY.smoke.topics}
    # THEN each has exactly one twin: same target, ordering and dead letters, on the twin topic
    assert len(TOPOLOGY.smoke_subscriptions) == len(chain) >= 10
    for name, sub in chain.items():
        twin = TOPOLOGY.smoke_subscriptions["smoke-" + name]
        assert (twin.target, twin.ordered, twin.dead_letter) == (sub.target, sub.ordered, sub.dead_letter)
        assert twin.topic == TOPOLOGY.route(sub.topic, smoke=True)
    # AND every turn topic a layer publishes to is twinned (only dead letters and the background
    # memory jobs, which carry no turn, are not)
    assert set(TOPOLOGY.topics) - set(TOPOLOGY.smoke.topics) == {"deadletter", "memory"}


# -- the signed header -----------------------------------------------------------------------


def test_the_smoke_header_must_sign_the_very_body_with_the_channels_secret():
    # GIVEN the local channel secrets and a body
    rt = runtime()
    secret = rt.channel_secrets.webhook_secrets("http")[0]
    body = b'{"text": "hello"}'
    # THEN its own signature marks it smoke, case-insensitively, and no header means a normal turn
    assert is_smoke("http", {"X-Charter-Smoke": sign(secret, body)}, body, rt.channel_secrets)
    assert not is_smoke("http", {"X-Other": "1"}, body, rt.channel_secrets)
    # AND a signature of another body, another secret or a bare flag is refused
    for value in (sign(secret, b"{}"), sign("not-the-secret", body), "1"):
        with pytest.raises(SmokeSignatureError):
            is_smoke("http", {SMOKE_HEADER: value}, body, rt.channel_secrets)
    assert issubclass(SmokeSignatureError, CharterError)


def test_a_smoke_header_that_does_not_verify_is_refused_and_nothing_is_published():
    # GIVEN a webhook signed correctly but with a forged smoke header
    rt = runtime()
    status, body = post(rt, "こんにちは", smoke=True, event_id="forged", **{"X-Charter-Smoke": "sha256=00"})
    # THEN it is a 401 like any bad signature, and no turn starts
    assert status == 401 and body == {"ok": False, "error": "unauthorized"}
    assert rt.bus.published == []  # type: ignore[attr-defined]


# -- a whole turn in one process -------------------------------------------------------------


def test_a_smoke_webhook_travels_only_the_twin_topics_and_records_each_layers_revision():
    # GIVEN a process of revision charter-x-c-abc1234 with the chain wired in process
    rt = runtime("charter-x-c-abc1234")
    # WHEN a signed smoke webhook arrives
    status, body = post(rt, "田中さんに明日までに見積書のタスクをお願い", smoke=True, event_id="s1")
    assert status == 200
    (turn_id,) = body["turn_ids"]
    # THEN every message of the turn went to a smoke twin, through the whole chain
    published = topics_of(rt, turn_id)
    assert published[0] == "smoke.received"
    assert {"smoke.contextualized", "smoke.proposed", "smoke.executed", "smoke.completed"} <= set(published)
    assert all(topic.startswith("smoke.") for topic in published), published
    # AND the reply was sent and the record says smoke, with the revision of every layer
    assert len(rt.channels["http"].sent) == 1  # type: ignore[attr-defined]
    record = rt.store.get(f"orgs/{ORG}/observability/{turn_id}")
    assert record is not None and record["smoke"] is True
    assert [e["layer"] for e in record["trail"]] == CHAIN_LAYERS
    assert {e["revision"] for e in record["trail"]} == {"charter-x-c-abc1234"}
    assert record["revisions"] == dict.fromkeys(["ingress", *CHAIN_LAYERS, "observer"], "charter-x-c-abc1234")
    # AND the record went to the smoke twin of turns.events, not to the one BigQuery reads
    streamed = [
        t
        for t, data, attrs, _ in rt.bus.published  # type: ignore[attr-defined]
        if attrs.get("event_kind") == "turn_record" and json.loads(data)["turn_id"] == turn_id
    ]
    assert streamed == ["smoke.events"]


def test_a_normal_webhook_never_touches_a_smoke_topic():
    # GIVEN a process WHEN a webhook without the smoke header arrives
    rt = runtime("stable")
    status, body = post(rt, "田中さんに明日までに見積書のタスクをお願い", smoke=False, event_id="n1")
    assert status == 200
    (turn_id,) = body["turn_ids"]
    # THEN no message of the turn went to a twin, and the record is an ordinary one
    published = topics_of(rt, turn_id)
    assert published[0] == "received" and "completed" in published
    assert not [t for t in published if t.startswith("smoke.")]
    record = rt.store.get(f"orgs/{ORG}/observability/{turn_id}")
    assert record is not None and record["smoke"] is False
    assert set(record["revisions"].values()) == {"stable"}


def test_the_rollback_guard_counts_served_turns_but_not_smoke_turns():
    # GIVEN an organisation whose people get the LLM arm's flags (the guard's subject)
    rt = runtime()
    guard = rt.rollback_guard
    assert isinstance(guard, CountingGuard)
    # WHEN one normal and one smoke turn are recorded
    _, normal = post(rt, "こんにちは", smoke=False, event_id="g1")
    _, smoke = post(rt, "こんにちは", smoke=True, event_id="g2")
    # THEN only the normal turn's record reached the guard
    assert [r["turn_id"] for r in guard.seen] == normal["turn_ids"]
    assert smoke["turn_ids"] and smoke["turn_ids"][0] not in [r["turn_id"] for r in guard.seen]


def test_forward_publishes_a_smoke_turn_to_the_twin_of_the_layers_output_topic():
    # GIVEN a smoke turn as the guardian received it, on a bus nobody listens to
    rt = build_runtime({"CHARTER_ENV": "test", "CHARTER_LLM": "none", "CHARTER_CHANNELS": "recording"})
    turn = Turn.model_validate(
        {
            "conversation_key": "acme/r1/u1",
            "org_id": ORG,
            "user_id": "u1",
            "room_id": "r1",
            "channel": "http",
            "smoke": True,
            "inbound": {
                "channel": "http",
                "org_id": ORG,
                "room_id": "r1",
                "user_id": "u1",
                "text": "x",
                "message_id": "m",
                "event_id": "m",
                "received_at": "2026-01-01T00:00:00Z",
            },
        }
    )
    # WHEN the guardian's runner forwards it
    runner(rt, "guardian").forward(turn, Outcome("allow"))
    # THEN it went to the twin of turns.guarded, and the message says smoke
    ((topic, _, attrs, _),) = rt.bus.published  # type: ignore[attr-defined]
    assert topic == "smoke.guarded" and attrs["smoke"] == "1"


def test_the_revision_is_charter_revision_else_cloud_runs_k_revision_else_stable():
    # GIVEN the settings of a local candidate, a Cloud Run instance and a plain process
    assert Settings.from_env({"CHARTER_REVISION": "candidate", "K_REVISION": "r"}).revision == "candidate"
    assert Settings.from_env({"K_REVISION": "charter-brain-c-1a2b3c4"}).revision == "charter-brain-c-1a2b3c4"
    assert Settings.from_env({}).revision == "stable"


def test_a_smoke_set_naming_an_unknown_topic_or_clashing_with_a_chain_name_is_refused():
    # GIVEN the topology file's data
    from shared_lib.delivery.topology import Topology

    data = TOPOLOGY.model_dump()
    # WHEN the smoke set names a topic key that does not exist, or its prefix makes chain names
    unknown = {**data, "smoke": {**data["smoke"], "topics": [*data["smoke"]["topics"], "nope"]}}
    clash = {**data, "smoke": {**data["smoke"], "topic_prefix": "", "subscription_prefix": ""}}
    # THEN loading it fails, naming the problem
    with pytest.raises(ValueError, match="unknown topic keys"):
        Topology.model_validate(unknown).check()
    with pytest.raises(ValueError, match="clash"):
        Topology.model_validate(clash).check()


def test_a_smoke_turn_its_channel_cannot_address_completes_unsent_but_a_user_turn_is_retried():
    # GIVEN the real plain-HTTP channel client with no reply URL (as in a cloud environment)
    rt = runtime(CHARTER_CHANNELS="clients")
    assert rt.channel_secrets.http_reply_url is None
    # WHEN a smoke turn and a normal turn arrive
    _, smoke = post(rt, "こんにちは", smoke=True, event_id="nowhere-smoke")
    _, normal = post(rt, "こんにちは", smoke=False, event_id="nowhere-user")
    # THEN the smoke turn is recorded, unsent, without an error or a dead letter
    record = rt.store.get(f"orgs/{ORG}/observability/{smoke['turn_ids'][0]}")
    assert record is not None and record["smoke"] is True and record["response_sent"] is False
    assert record["errors"] == []
    dead = [a for t, _, a, _ in rt.bus.published if t == "deadletter"]  # type: ignore[attr-defined]
    assert [a["turn_id"] for a in dead] == normal["turn_ids"]
    # AND the user's turn kept today's behaviour: redelivered, then dead-lettered (and alerted)
    assert rt.store.get(f"orgs/{ORG}/observability/{normal['turn_ids'][0]}") is None
