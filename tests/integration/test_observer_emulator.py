"""The observer on the Firestore emulator: one record per turn however often events are
redelivered, and the operator commands reading what it wrote (replay without any LLM call).

The chain runs in process over the emulator's Firestore, with the real Anthropic adapter
pointed at the fake Anthropic server on 127.0.0.1.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator

import pytest

from infra.fake_llm import FakeAnthropicServer
from shared_lib.cli import main as charter
from shared_lib.demo_data import CONVERSATION, DEMO_ORG, DEMO_ROOM, seed_demo_directory
from shared_lib.layers import observer
from shared_lib.layers.ingress import accept
from shared_lib.policy.config import POLICY_FILE
from shared_lib.runtime import Runtime
from shared_lib.turn.inbound import InboundMessage
from shared_lib.wiring.composition import build_runtime, wire_inprocess
from tests.conftest import configure_from_env

pytestmark = pytest.mark.integration
SEED_REQUIRED = (
    "record_id",
    "timestamp",
    "user_id",
    "organization_id",
    "room_id",
    "input_message",
    "llm_model",
    "llm_reasoning",
    "guardian_action",
    "auth_result",
    "final_response",
)
LAYERS = ("context", "brain", "guardian", "authorizer", "executor", "responder")


@pytest.fixture
def fake_llm() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer() as server:
        yield server


@pytest.fixture
def rt(firestore_store, firestore_project, fake_llm, monkeypatch) -> Runtime:
    monkeypatch.setenv("CHARTER_PROJECT", firestore_project)
    env = {
        "CHARTER_ENV": "test",
        "CHARTER_CHANNELS": "recording",
        "CHARTER_FLAGS_TTL": "0",
        "CHARTER_PROJECT": firestore_project,
        "ANTHROPIC_BASE_URL": fake_llm.url,
        "ANTHROPIC_API_KEY": "fake",
    }
    runtime = build_runtime(env, store=firestore_store)
    runtime.notifiers = []
    wire_inprocess(runtime)
    seed_demo_directory(runtime.store)
    return runtime


@pytest.fixture
def demo_turns(rt: Runtime) -> list[str]:
    out = []
    for i, (speaker, text) in enumerate(CONVERSATION, 1):
        msg = InboundMessage(
            channel="http",
            org_id=DEMO_ORG,
            room_id=DEMO_ROOM,
            user_id=speaker,
            text=text,
            message_id=f"m{i}",
            event_id=f"emu-{i}",
            received_at=rt.clock(),
        )
        turn_id = accept(rt, msg)
        assert turn_id is not None
        out.append(turn_id)
    return out


def record_ids(rt: Runtime) -> list[str]:
    return sorted(doc_id for doc_id, _ in rt.store.query(f"orgs/{DEMO_ORG}/observability"))


def observer_messages(rt: Runtime) -> list[tuple[str, bytes, dict[str, str], str]]:
    return [p for p in rt.bus.published if p[0] in ("completed", "events", "shadow")]  # type: ignore[attr-defined]


def test_redelivered_observer_events_leave_one_record_per_turn(rt, demo_turns):
    # GIVEN the demo conversation recorded in Firestore
    assert record_ids(rt) == sorted(demo_turns)
    before = {i: d["recorded_at"] for i, d in rt.store.query(f"orgs/{DEMO_ORG}/observability")}
    events_before = len(rt.store.query(f"orgs/{DEMO_ORG}/events"))
    messages = observer_messages(rt)
    # WHEN every message the observer received is delivered again, twice in a row and from four threads at once
    for topic, data, attrs, key in messages * 2:
        rt.bus.publish(topic, data, attrs, key)
    errors: list[BaseException] = []

    def deliver_all() -> None:  # straight into the observer: four deliveries race on each document
        try:
            for _, data, attrs, _ in messages:
                observer.handle(rt, data, attrs)
        except BaseException as exc:  # a thread's failure must fail the test
            errors.append(exc)

    threads = [threading.Thread(target=deliver_all) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # THEN nothing failed, there is still exactly one record per turn, the first one written, and no event twice
    assert errors == []
    assert record_ids(rt) == sorted(demo_turns)
    assert {i: d["recorded_at"] for i, d in rt.store.query(f"orgs/{DEMO_ORG}/observability")} == before
    assert len(rt.store.query(f"orgs/{DEMO_ORG}/events")) == events_before


def test_turns_list_and_show_read_every_demo_turn_from_the_emulator(rt, demo_turns, capsys):
    # WHEN the operator lists the turns (the command builds its runtime from the environment)
    assert charter(["turns", "list", "--json"]) == 0
    rows = {r["record_id"]: r for r in json.loads(capsys.readouterr().out)}
    # THEN every demo turn is there with the seed's required columns filled
    assert sorted(rows) == sorted(demo_turns)
    for row in rows.values():
        assert all(row[f] not in (None, "") for f in SEED_REQUIRED), row["record_id"]
    # AND each turn's trail is complete, layer by layer
    for turn_id in demo_turns:
        assert charter(["turns", "show", turn_id]) == 0
        out = capsys.readouterr().out
        assert all(f" {layer} " in out for layer in LAYERS), turn_id


def test_replay_reports_a_changed_verdict_and_the_fake_llm_gets_no_request(
    rt, demo_turns, fake_llm, capsys, tmp_path, monkeypatch
):
    # GIVEN the first demo turn (a task the guardian allowed at confidence 0.9), and a quiet fake LLM
    fake_llm.reset()
    # WHEN the policy's "medium" confidence threshold is raised above it and the turn is replayed
    policy = json.loads(POLICY_FILE.read_text(encoding="utf-8"))
    policy["confidence"]["medium"] = 0.95
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(policy, ensure_ascii=False), encoding="utf-8")
    monkeypatch.setenv("CHARTER_POLICY", str(path))
    configure_from_env()
    assert charter(["replay", demo_turns[0], "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    # THEN the changed verdict is reported, and no request reached the LLM server
    assert report["recorded"]["guardian"] == "allow/pass" and report["replayed"]["guardian"].startswith(
        "confirm/"
    )
    assert report["changed"] is True and report["llm_calls"] == 0
    assert fake_llm.requests == []
