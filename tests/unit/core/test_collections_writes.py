"""What the code writes against the catalogue of collections: a representative workload runs in
process on a store that records every write, then each written document must belong to a
catalogued collection, and a document carrying an expiry field (``expires_at`` or any TTL field
of the catalogue) must be in a collection whose TTL policy is on that field.

The workload: the demo conversation served by the LLM arm (the scripted model on a local fake
Anthropic API), a personal detail to vault, the same in shadow mode, an envelope too large to
travel inline, and a message dead-lettered by the handler's fallback counter.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from infra.fake_llm.server import FakeAnthropicServer
from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.collections import COLLECTIONS_FILE, Catalogue, load_catalogue
from shared_lib.delivery.topology import TOPOLOGY
from shared_lib.demo_data import CONVERSATION, DEMO_ORG, DEMO_ROOM, DEMO_USER, seed_demo_directory
from shared_lib.flags import REPO_FLAGS_FILE, seed_flags
from shared_lib.layers.ingress import accept
from shared_lib.ports import Doc, Transaction
from shared_lib.runtime import Runtime
from shared_lib.turn.envelope import MAX_INLINE_BYTES, Turn
from shared_lib.turn.inbound import InboundMessage
from shared_lib.wiring import push
from shared_lib.wiring.composition import build_runtime, wire_inprocess

Write = tuple[str, Doc]


class _RecordingTransaction:
    def __init__(self, txn: Transaction, record: Callable[[str, Doc], None]) -> None:
        self._txn, self._record = txn, record

    def get(self, path: str) -> Doc | None:
        return self._txn.get(path)

    def set(self, path: str, data: Doc, *, merge: bool = False) -> None:
        self._record(path, data)
        self._txn.set(path, data, merge=merge)

    def create(self, path: str, data: Doc) -> None:
        self._record(path, data)
        self._txn.create(path, data)

    def delete(self, path: str) -> None:
        self._txn.delete(path)


class RecordingStore(MemoryStore):
    """A ``MemoryStore`` that keeps every document written (directly or in a transaction)."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[Write] = []
        self._writes_lock = threading.Lock()

    def _record(self, path: str, data: Doc) -> None:
        with self._writes_lock:
            self.writes.append((path, dict(data)))

    def set(self, path: str, data: Doc, *, merge: bool = False) -> None:
        self._record(path, data)
        super().set(path, data, merge=merge)

    def create(self, path: str, data: Doc) -> bool:
        self._record(path, data)
        return super().create(path, data)

    def run_transaction(self, fn: Callable[[Any], Any]) -> Any:
        return super().run_transaction(lambda txn: fn(_RecordingTransaction(txn, self._record)))


def catalogue_violations(writes: list[Write], catalogue: Catalogue) -> list[str]:
    """Writes outside the catalogue, and expiry fields in collections without that TTL field."""
    expiry_fields = {"expires_at"} | {c.ttl_field for c in catalogue.collections if c.ttl_field}
    violations = set()
    for path, data in writes:
        entry = catalogue.of_path(path)
        if entry is None:
            violations.add(f"{path}: no collection of the catalogue")
            continue
        for name in sorted(expiry_fields & set(data)):
            if entry.ttl_field != name:
                violations.add(
                    f"{entry.name}: written with {name!r} but its TTL field is {entry.ttl_field!r}"
                )
    return sorted(violations)


_events = itertools.count(1)


def _say(rt: Runtime, text: str) -> str | None:
    n = next(_events)
    return accept(
        rt,
        InboundMessage(
            channel="http",
            org_id=DEMO_ORG,
            room_id=DEMO_ROOM,
            user_id=DEMO_USER,
            text=text,
            message_id=f"w-{n}",
            event_id=f"w-{n}",
            received_at=datetime.now(UTC),
        ),
    )


class _PushEvent(dict[str, Any]):
    """The slice of a CloudEvent ``dead_letter_fallback`` reads: ``data`` and ``["id"]``."""

    def __init__(self, data: dict[str, Any]) -> None:
        super().__init__(id="push-1")
        self.data = data


def _dead_letter_by_fallback(rt: Runtime) -> None:
    turn = Turn.from_inbound(
        InboundMessage(
            channel="http",
            org_id=DEMO_ORG,
            room_id=DEMO_ROOM,
            user_id=DEMO_USER,
            text="[[fail:context]]",
            message_id="dl-1",
            event_id="dl-1",
            received_at=datetime.now(UTC),
        )
    )
    data, attrs = turn.to_message("ingress", rt.store)
    event = _PushEvent({"message": {"messageId": "m-dl-1", "data": "", "attributes": attrs}})
    outcomes = [
        push.dead_letter_fallback(rt, "context", event, data, attrs)
        for _ in range(TOPOLOGY.retry.max_delivery_attempts)
    ]
    assert outcomes[-1] is True and not any(outcomes[:-1])


@pytest.fixture(scope="module")
def workload(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RecordingStore]:
    store = RecordingStore()
    with FakeAnthropicServer() as llm_server:
        env = {
            "CHARTER_ENV": "test",
            "CHARTER_CHANNELS": "recording",
            "CHARTER_FLAGS_TTL": "0",
            "CHARTER_DEADLETTER_FALLBACK": "1",
            "ANTHROPIC_BASE_URL": llm_server.url,
            "ANTHROPIC_API_KEY": "scripted-model",
        }
        rt = build_runtime(env, store=store)
        wire_inprocess(rt)
        seed_demo_directory(store)
        # The LLM arm serves (the repository's flags file), with a personal detail to vault.
        for _, text in CONVERSATION:
            _say(rt, text)
        _say(rt, "覚えておいて：私のメールは taro.suzuki@example.com です")
        # Shadow mode: the candidate runs on a copy and the two sides are compared.
        flags = json.loads(REPO_FLAGS_FILE.read_text(encoding="utf-8")) | {"brain_mode": "shadow"}
        flags_file = tmp_path_factory.mktemp("flags") / "flags.json"
        flags_file.write_text(json.dumps(flags), encoding="utf-8")
        seed_flags(store, flags_file)
        _say(rt, CONVERSATION[0][1])
        _say(rt, "私の電話番号は 090-1234-5678 だと覚えておいて")
        # An envelope over the inline limit travels by reference.
        big = Turn.from_inbound(
            InboundMessage(
                channel="http",
                org_id=DEMO_ORG,
                room_id=DEMO_ROOM,
                user_id=DEMO_USER,
                text="大",
                message_id="big-1",
                event_id="big-1",
                received_at=datetime.now(UTC),
            )
        )
        big.context.knowledge = [{"text": "x" * MAX_INLINE_BYTES}]
        big.to_message("context", store)
        _dead_letter_by_fallback(rt)
    yield store


def _collections(writes: list[Write]) -> set[str]:
    catalogue = load_catalogue()
    return {entry.name for path, _ in writes if (entry := catalogue.of_path(path)) is not None}


def test_the_workload_writes_the_expiring_collections_it_is_meant_to_cover(workload: RecordingStore) -> None:
    # A check over a workload that never wrote them would prove nothing about them.
    written = _collections(workload.writes)
    assert {
        "idempotency",
        "receipts",
        "send_receipts",
        "sessions",
        "webhook_events",
        "vaults",
        "blobs",
        "delivery_attempts",
        "shadow_sides",
        "shadow_comparisons",
        "rollout_guard_events",
    } <= written


def test_every_written_document_is_catalogued_and_expires_only_under_a_ttl_policy(
    workload: RecordingStore,
) -> None:
    assert catalogue_violations(workload.writes, load_catalogue()) == []


def _catalogue_with(
    tmp_path: Path, change: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]
) -> Catalogue:
    data = json.loads(COLLECTIONS_FILE.read_text(encoding="utf-8"))
    data["collections"] = change(data["collections"])
    mutated = tmp_path / "collections.json"
    mutated.write_text(json.dumps(data), encoding="utf-8")
    return load_catalogue(mutated)


@pytest.mark.parametrize(
    "name", ["vaults", "blobs", "send_receipts", "delivery_attempts", "shadow_comparisons"]
)
def test_a_ttl_policy_deleted_from_the_catalogue_is_reported(
    workload: RecordingStore, tmp_path: Path, name: str
) -> None:
    # GIVEN the catalogue without the TTL field of one collection the code writes expiring documents to
    def drop_ttl(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{**e, "ttl_field": None} if e["name"] == name else e for e in entries]

    # THEN the same workload is reported
    violations = catalogue_violations(workload.writes, _catalogue_with(tmp_path, drop_ttl))
    assert f"{name}: written with 'expires_at' but its TTL field is None" in violations


def test_a_collection_missing_from_the_catalogue_is_reported(
    workload: RecordingStore, tmp_path: Path
) -> None:
    def drop_tasks(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [e for e in entries if e["name"] != "tasks"]

    violations = catalogue_violations(workload.writes, _catalogue_with(tmp_path, drop_tasks))
    assert any(v.startswith(f"orgs/{DEMO_ORG}/tasks/") for v in violations), violations
