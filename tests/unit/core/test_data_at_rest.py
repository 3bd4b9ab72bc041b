"""Personal data at rest: a conversation full of secrets, served in process by each arm, leaves
no value in clear in any document of any collection of the store — history, memories, tasks,
receipts, records, LLM calls, sessions, a blocked turn's history included — while the person
still reads their own values back and never a placeholder.

The LLM arm is the scripted model on a local fake Anthropic API; the legacy arm is the
keyword brain (``CHARTER_LLM=none``), which proposes with the values as typed.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from infra.fake_llm.server import FakeAnthropicServer
from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.collections import of_path
from shared_lib.demo_data import DEMO_ORG, DEMO_ROOM, DEMO_USER, seed_demo_directory
from shared_lib.layers.ingress import accept
from shared_lib.runtime import Runtime
from shared_lib.turn.inbound import InboundMessage
from shared_lib.wiring.composition import build_runtime, wire_inprocess

SECRETS = {
    "e-mail": "taro.suzuki@example.com",
    "phone": "090-1234-5678",
    "landline": "03-9876-5432",
    "card": "4111 1111 1111 1111",
    "password": "hunter2-Secret!",
    "anthropic key": "sk-ant-api03-AbCdEfGhIjKlMnOpQrSt",
    "openai key": "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX",
    "my number": "1234-5678-9012",
}
S = SECRETS
# The legacy arm asks before remembering or creating; the LLM arm does not.
YES_IF_LEGACY = "<yes if legacy>"
CONVERSATION = [
    f"覚えておいて：私のメールは {S['e-mail']} で電話は {S['phone']} です",
    YES_IF_LEGACY,
    f"田中さんに明日までに {S['phone']} に折り返し電話するタスクをお願い",
    YES_IF_LEGACY,
    f"山田さんの権限を管理者に変更して password: {S['password']}",
    f"覚えておいて：カードは {S['card']}、APIキーは {S['anthropic key']} と {S['openai key']}、"
    f"マイナンバーは {S['my number']}",
    YES_IF_LEGACY,
    "私のタスク一覧を見せて",
    # a double confirmation, left pending: the session holds the action when the store is scanned
    f"全員に連絡先は {S['landline']} とアナウンスして",
    "はい",
]
ANY_PLACEHOLDER = re.compile(r"\[[A-Z][A-Z_]*(?:_\d+)?\]|\[[A-Z_]+_?…")
COVERED = {
    "llm": {
        "conversations",
        "messages",
        "memories",
        "tasks",
        "receipts",
        "observability",
        "llm_calls",
        "sessions",
    },
    "legacy": {
        "conversations",
        "messages",
        "memories",
        "tasks",
        "receipts",
        "observability",
        "sessions",
        "vaults",
    },
}
_events = itertools.count(1)


def forms(value: str) -> set[str]:
    """A value as typed and without its separators (a store might normalise it)."""
    return {value, re.sub(r"[\s\-]", "", value)}


def values_in_clear(docs: dict[str, dict[str, Any]]) -> dict[str, set[str]]:
    """Document path -> the names of the secrets found in it in clear."""
    found: dict[str, set[str]] = {}
    for path, doc in docs.items():
        text = json.dumps(doc, ensure_ascii=False, default=str)
        hits = {name for name, value in SECRETS.items() if any(f in text for f in forms(value))}
        if hits:
            found[path] = hits
    return found


def say(rt: Runtime, text: str) -> None:
    n = next(_events)
    accept(
        rt,
        InboundMessage(
            channel="http",
            org_id=DEMO_ORG,
            room_id=DEMO_ROOM,
            user_id=DEMO_USER,
            text=text,
            message_id=f"s-{n}",
            event_id=f"s-{n}",
            received_at=datetime.now(UTC),
        ),
    )


@pytest.fixture(scope="module", params=["llm", "legacy"])
def served(request: pytest.FixtureRequest) -> Iterator[tuple[str, MemoryStore, list[str]]]:
    arm, store = request.param, MemoryStore()
    with FakeAnthropicServer() as llm_server:
        env = {
            "CHARTER_ENV": "test",
            "CHARTER_CHANNELS": "recording",
            "CHARTER_FLAGS_TTL": "0",
            "ANTHROPIC_BASE_URL": llm_server.url,
            "ANTHROPIC_API_KEY": "scripted-model",
        }
        if arm == "legacy":
            env["CHARTER_LLM"] = "none"
        rt = build_runtime(env, store=store)
        wire_inprocess(rt)
        seed_demo_directory(store)
        for text in CONVERSATION:
            if text == YES_IF_LEGACY:
                if arm == "legacy":
                    say(rt, "はい")
                continue
            say(rt, text)
        replies = [r.text for r in rt.channels["http"].sent]  # type: ignore[attr-defined]
    yield arm, store, replies


def test_the_conversation_reached_what_the_scan_must_cover(served) -> None:
    # A scan of a store the conversation never wrote to would prove nothing.
    arm, store, _ = served
    written = {entry.name for path in store.dump() if (entry := of_path(path)) is not None}
    assert COVERED[arm] <= written
    records = [d for p, d in store.dump().items() if "/observability/" in p]
    assert any(r["guardian_action"] == "block" for r in records), "a blocked turn"
    assert any(r["response_kind"] == "confirm" for r in records), "a pending confirmation"
    assert any(d.get("pending_action") for p, d in store.dump().items() if "/sessions/" in p)


def test_no_document_of_any_collection_holds_a_value_in_clear(served) -> None:
    _, store, _ = served
    assert values_in_clear(store.dump()) == {}


def test_the_history_of_the_blocked_turn_is_masked_not_missing(served) -> None:
    _, store, _ = served
    history = [d["text"] for p, d in store.dump().items() if "/messages/" in p and d["role"] == "user"]
    assert any("変更して password: [SECRET]" in text for text in history), history


def test_the_person_reads_their_own_values_and_never_a_placeholder(served) -> None:
    _, _, replies = served
    assert replies and not [r for r in replies if ANY_PLACEHOLDER.search(r)]
    # the memory the person asked for is confirmed with the values they typed
    assert any(S["e-mail"] in r and S["phone"] in r for r in replies), replies
    # a value of an earlier message shown again (the pending announcement) is in words
    assert any("（電話番号・非表示）" in r for r in replies), replies


def test_the_scan_finds_a_value_left_in_clear() -> None:
    # GIVEN a document that kept a phone number without its hyphens, and a masked one
    docs = {
        "orgs/o/memories/m1": {"content": "電話 09012345678"},
        "orgs/o/memories/m2": {"content": "[PHONE]"},
    }
    # THEN the scan reports exactly the first
    assert values_in_clear(docs) == {"orgs/o/memories/m1": {"phone"}}


def test_the_handlers_got_the_real_values_and_the_store_keeps_them_masked(served) -> None:
    # A memory saved with numbered placeholders would mean the handler never saw the values (the
    # vault restores them for it, after a confirmation too); the store's own form has no number.
    _, store, _ = served
    memories = [d["content"] for p, d in store.dump().items() if "/memories/" in p]
    assert any("[EMAIL]" in m and "[PHONE]" in m for m in memories), memories
    assert not [m for m in memories if re.search(r"\[[A-Z_]+_\d+\]", m)]


def test_every_document_of_personal_data_expires_by_the_retention(served) -> None:
    _, store, _ = served
    personal = {
        p: d for p, d in store.dump().items() if (e := of_path(p)) is not None and e.retention == "org"
    }
    assert (
        personal and [p for p, d in personal.items() if not isinstance(d.get("expires_at"), datetime)] == []
    )
