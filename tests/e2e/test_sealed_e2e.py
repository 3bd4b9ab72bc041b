"""Sealed, not destroyed, on the whole local stack (issue 36): a mix of turns — a memory holding a
mobile number and an e-mail address, a task whose body holds an address, the event episode of the
memory, a conversation summarised by compaction — then every collection of the organisation read
on the emulator: no value in clear anywhere, and no placeholder stored as a value outside the
records and logs (masked by design, never read back to a person). The author reads the number back
in clear; a member of the same room asking the same gets neither value. Every sealed value on the
emulator is sealed under the organisation's key derived from the deployment's: the organisation's
cipher opens it, the bare deployment key does not."""

from __future__ import annotations

import json
import math
import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from cryptography.fernet import InvalidToken

from infra.local_stack import FAKE_CONTEXT_WINDOW
from shared_lib.brain.vault import org_vault, vault_cipher
from shared_lib.collections import collection_path
from shared_lib.context.history import append_message, conversation_path
from shared_lib.layers.memory import carried_tokens
from shared_lib.memory.index import source_path
from shared_lib.persona.catalogue import load_persona
from shared_lib.privacy.sealing import SEALED_FIELD, destroyed, masked, unseal
from shared_lib.privacy.text_fold import fold
from shared_lib.wiring.features import tool_registry

ORG = "demo"
AUTHOR, ROOM_MATE = "u-suzuki", "u-yamada"
MOBILE, MAIL = "090-3318-2046", "sato.k@sato-kogyo.co.jp"
TASK_MAIL, OFFICE = "mitsumori@example.jp", "03-5521-0987"
# Records and logs: masked by design (seed 002 §7), never read back to a person, so a placeholder
# there stands for nothing. Any other collection holding one with no sealed value fails the scan.
LOGS = {
    "observability": "the turn record",
    "llm_calls": "what the cloud LLM was sent",
    "receipts": "a tool call's request and result",
    "approval_jobs": "what was asked to be confirmed",
    "agent_states": "the conversation's working state",
    "ft_candidates": "fine-tuning data, masked like the brain saw it",
}


def readable(text: str) -> str:
    """``text`` folded, separators between digits gone, lower case: a value in any form it was typed."""
    return re.sub(r"(?<=\d)[\s\-.()]+(?=\d)", "", fold(text).text).lower()


def values_in(text: str) -> set[str]:
    seen = readable(text)
    return {v for v in (MOBILE, MAIL, TASK_MAIL, OFFICE) if readable(v) in seen}


def every_document(stack, org: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every document under ``orgs/{org}`` on the emulator, found by listing collections (none
    named in advance: a collection nobody thought of is read too)."""

    def walk(collection: Any) -> Iterator[tuple[str, dict[str, Any]]]:
        for ref in collection.list_documents():
            snap = ref.get()
            if snap.exists:
                yield ref.path, snap.to_dict() or {}
            for sub in ref.collections():
                yield from walk(sub)

    for collection in stack.store.client.document(f"orgs/{org}").collections():
        yield from walk(collection)


def collection_of(path: str) -> str:
    return path.split("/")[-2]


def replies_in(stack, room: str) -> list[str]:
    return [
        json.dumps(s.get("body"), ensure_ascii=False)
        for s in stack.fake_channel_sent()
        if s.get("channel") == "http" and room in json.dumps(s.get("body"), ensure_ascii=False)
    ]


def turn(stack, room: str, user: str, text: str) -> tuple[str, str]:
    """One person's message and the assistant's reply to it (its turn id, the reply)."""
    before = len(replies_in(stack, room))
    resp = stack.send("http", text, org=ORG, room=room, user=user)
    assert resp.status == 200, resp.body
    reply = stack.wait_for(
        lambda: (r := replies_in(stack, room))[before:] and r[-1], what=f"the reply to {text[:20]}"
    )
    return str(resp.body["turn_ids"][0]), reply


def carried() -> int:
    rt = SimpleNamespace(
        persona=load_persona(), registry=tool_registry(), settings=SimpleNamespace(context_token_budget=2000)
    )
    return carried_tokens(rt)


def seed_history(stack, room: str) -> None:
    """The author's conversation in ``room`` at 75 % of the serving model's window, the office
    number said early enough to leave the window with the next compaction (sealed as the stack
    seals: the organisation's key derived from the local stack's development key)."""
    cipher = org_cipher()
    start = datetime.now(UTC) - timedelta(hours=2)
    count = math.ceil((0.75 * FAKE_CONTEXT_WINDOW - carried()) / 500)
    said = count - 10 if (count - 10) % 2 == 0 else count - 11  # a person's line, summarised next
    for i in range(count):
        text = ("見積書の件" if i % 2 == 0 else "承知したウル") * 100
        if i == said:
            text = f"先方の代表は{OFFICE}です"
        append_message(
            stack.store,
            ORG,
            f"{ORG}/{room}/{AUTHOR}",
            f"seed{i:03d}-0-{'in' if i % 2 == 0 else 'out'}",
            role="user" if i % 2 == 0 else "assistant",
            text=text,
            at=start + timedelta(seconds=i),
            user_id=AUTHOR,
            room_id=room,
            cipher=cipher,
        )


def org_cipher():
    vault = org_vault("local", None)
    assert vault is not None
    return vault.for_org(ORG)


def sealed_tokens(doc: dict[str, Any]) -> list[str]:
    """The Fernet tokens a document holds: its sealed values and a vault's ciphertext."""
    sealed = doc.get(SEALED_FIELD)
    entries = sealed.values() if isinstance(sealed, dict) else []
    found = [t for each in entries if isinstance(each, list) for t in each if isinstance(t, str)]
    return [*found, *([doc["ciphertext"]] if isinstance(doc.get("ciphertext"), str) else [])]


def opens(cipher: Any, token: str) -> bool:
    try:
        cipher.decrypt(token.encode())
    except InvalidToken:
        return False
    return True


def indexed_episode(stack, turn_id: str) -> dict[str, Any] | None:
    for eid, doc in stack.store.query(collection_path("episodes", org=ORG), limit=None):
        if doc.get("source_turn_id") == turn_id and stack.store.get(source_path(ORG, "episode", eid)):
            return doc
    return None


@pytest.mark.e2e
def test_after_a_mix_of_turns_no_collection_holds_a_value_in_clear_or_a_destroyed_one(local_stack):
    room = f"room-seal-{uuid.uuid4().hex[:6]}"
    cipher = org_cipher()
    # GIVEN the author's conversation in a group room, long enough to be summarised after a turn
    seed_history(local_stack, room)
    # WHEN they ask the assistant to keep a mobile number and an address, then to create a task
    # whose body holds an address, then ask for the contact back; a room mate asks the same
    remembered, _ = turn(
        local_stack, room, AUTHOR, f"覚えておいて：佐藤工業の佐藤さんの携帯は{MOBILE}、メールは {MAIL} です📱"
    )
    turn(local_stack, room, AUTHOR, f"田中さんに明日までに {TASK_MAIL} へ見積書を送るタスクをお願い🙏")
    _, mine = turn(local_stack, room, AUTHOR, "佐藤さんの連絡先なんだっけ？")
    _, theirs = turn(local_stack, room, ROOM_MATE, "佐藤さんの連絡先なんだっけ？")
    # THEN the author reads the number and the address back in clear; the room mate neither
    assert {MOBILE, MAIL} <= values_in(mine), mine
    assert values_in(theirs) == set(), theirs
    # AND the memory's event episode is written and indexed, its values sealed
    episode = local_stack.wait_for(
        lambda: indexed_episode(local_stack, remembered),
        progress=lambda: local_stack.claims(ORG, remembered),
        what="the memory's event episode, written and indexed",
    )
    assert destroyed(episode) == []
    # AND the conversation was summarised, the office number sealed in its summary
    summarised = local_stack.wait_for(
        lambda: (
            (d := local_stack.store.get(conversation_path(ORG, f"{ORG}/{room}/{AUTHOR}")) or {}).get(
                "summary"
            )
            and d
        ),
        what="the conversation's summary",
    )
    assert "[PHONE]" in summarised["summary"] and summarised.get(SEALED_FIELD)
    assert readable(OFFICE) in readable(unseal(summarised, cipher)[0]["summary"])
    # AND the memory is stored sealed: the number opens with the key, for its author only
    memories = [
        d for _, d in local_stack.store.query(f"orgs/{ORG}/memories", where=[("user_id", "==", AUTHOR)])
    ]
    kept = [
        d
        for d in memories
        if d.get(SEALED_FIELD) and readable(MOBILE) in readable(unseal(d, cipher)[0]["content"])
    ]
    assert kept and all("[PHONE]" in d["content"] for d in kept)
    # AND reading every collection of the organisation on the emulator: no value in clear …
    documents = dict(every_document(local_stack, ORG))
    collections = {collection_of(p) for p in documents}
    assert {"memories", "memory_chunks", "tasks", "episodes", "messages", "conversations"} <= collections
    in_clear = {
        p: found
        for p, d in documents.items()
        if (found := values_in(json.dumps(masked(d), ensure_ascii=False, default=str)))
    }
    assert in_clear == {}
    # … and no placeholder stored as a value, outside the records and logs
    lost = {p: destroyed(d) for p, d in documents.items() if collection_of(p) not in LOGS and destroyed(d)}
    assert lost == {}
    # AND every sealed value is under the organisation's derived key: the organisation's cipher
    # opens it, the bare deployment key (what sealed everything before) does not
    deployment = vault_cipher("local", None)
    assert deployment is not None
    tokens = {p: sealed_tokens(d) for p, d in documents.items() if sealed_tokens(d)}
    assert {"memories", "memory_chunks", "tasks", "vaults"} <= {collection_of(p) for p in tokens}
    assert [p for p, found in tokens.items() if not all(opens(cipher, t) for t in found)] == []
    assert [p for p, found in tokens.items() if any(opens(deployment, t) for t in found)] == []
