"""The responder's end commit (``state.turn_end``): the session, the agent state and the reply's
history, gathered by the after steps, cost one transaction a turn instead of two and a batch,
write what the separate commits wrote, and write nothing when the stage fails before its end."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from infra.bench.hops import CountingStore
from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.collections import session_path
from shared_lib.context.history import append_message, history_path
from shared_lib.state import session, turn_end

ORG, KEY = "acme", "line:room-営業部:u-suzuki"
AGENT = "orgs/acme/agent_states/c-営業部"
NOW = datetime(2026, 11, 25, 18, 30, tzinfo=UTC)


class FirestoreLikeStore(MemoryStore):
    """A memory store whose transactions refuse a read after a write, as Firestore's client does
    (``ReadAfterWriteError``): parts that compose must not reach the store's transaction so."""

    def run_transaction(self, fn: Any) -> Any:
        def strict(txn: Any) -> Any:
            class _Strict:
                wrote = False

                def get(self, path: str) -> Any:
                    if self.wrote:
                        raise AssertionError(f"read of {path} after a write in one transaction")
                    return txn.get(path)

                def get_many(self, paths: Any) -> Any:
                    if self.wrote:
                        raise AssertionError(f"read of {paths} after a write in one transaction")
                    return txn.get_many(paths)

                def set(self, path: str, data: Any, *, merge: bool = False) -> None:
                    self.wrote = True
                    txn.set(path, data, merge=merge)

                def create(self, path: str, data: Any) -> None:
                    self.wrote = True
                    txn.create(path, data)

                def delete(self, path: str) -> None:
                    self.wrote = True
                    txn.delete(path)

            return fn(_Strict())

        return super().run_transaction(strict)


def counted() -> tuple[CountingStore, FirestoreLikeStore]:
    inner = FirestoreLikeStore()
    return CountingStore(inner), inner  # type: ignore[arg-type]


def pending(store: Any, approval_id: str) -> None:
    session.set_pending(
        store,
        ORG,
        KEY,
        {"approval_id": approval_id, "tool_name": "create_task", "params": {"title": "見積書の送付🙏"}},
        NOW - timedelta(minutes=3),
    )


def agent_moved(txn: Any) -> int:
    doc = txn.get(AGENT) or {"moves": 0}
    txn.set(AGENT, {"moves": doc["moves"] + 1})
    return int(doc["moves"]) + 1


def the_after_steps(
    store: Any, *, approval_id: str, error: str | None, moves: list[int] | None = None
) -> None:
    """What the responder's after steps write at a turn's end: the answered confirmation
    consumed, the turn recorded in the session, the reply appended to the history, and (given
    ``moves``) the agent state moved."""
    deferred = turn_end.deferring(store, reads=[session_path(ORG, KEY)])
    session.resolve_pending(deferred, ORG, KEY, approval_id, NOW, outcome="approved")
    session.finish_turn(deferred, ORG, KEY, NOW, error_code=error, last_intent="tool_call")
    append_message(
        deferred,
        ORG,
        KEY,
        "t-42-0-out",
        role="assistant",
        text="「見積書の送付」をタスクにしたウル🐺 11月27日（金）までだウル",
        at=NOW,
        user_id="u-suzuki",
    )
    if moves is not None:
        turn_end.run(store, agent_moved, moves.append, reads=[AGENT])


def test_the_session_changes_and_the_reply_history_are_one_transaction_at_the_end():
    # GIVEN a conversation whose 「はい」 answered a pending action
    store, inner = counted()
    pending(inner, "ap-1")
    # WHEN the after steps run inside the responder's end commit
    moves: list[int] = []
    with turn_end.opened(store):  # type: ignore[arg-type]
        the_after_steps(store, approval_id="ap-1", error=None, moves=moves)
        assert dict(store.ops["ingress"]) == {}, "nothing is written before the end"
    # THEN one transaction (begin, commit) and one batched read of the session and the agent
    # state: 3 round trips, where three transactions and a batch were 10
    assert dict(store.ops["ingress"]) == {"transaction": 1, "get_many": 1}
    assert moves == [1] and inner.get(AGENT) == {"moves": 1}
    # AND the session reads as the separate commits left it: consumed, then the turn recorded
    doc = session.load_session(inner, ORG, KEY, NOW)
    assert doc["pending_actions"] == [] and doc["mode"] == "normal"
    assert doc["last_resolution"]["outcome"] == "approved" and doc["last_intent"] == "tool_call"
    # AND the reply is in the history
    messages = inner.query(history_path(ORG, KEY))
    assert [doc["role"] for _, doc in messages] == ["assistant"]


def test_the_same_steps_without_the_end_commit_write_as_before():
    # GIVEN the same conversation, the steps run outside a responder (a job's sweep, a test)
    store, inner = counted()
    pending(inner, "ap-1")
    # WHEN they run
    moves: list[int] = []
    the_after_steps(store, approval_id="ap-1", error="tool_timeout", moves=moves)
    # THEN each commits at once: three transactions and a batch, as before
    assert dict(store.ops["ingress"]) == {"transaction": 3, "get": 3, "set_many": 1}
    assert moves == [1]
    doc = session.load_session(inner, ORG, KEY, NOW)
    assert doc["mode"] == "error_recovery" and doc["error_count"] == 1


def test_a_stage_that_fails_before_its_end_writes_nothing_and_its_redelivery_writes_once():
    # GIVEN the after steps gathered, then the send fails (the stage raises to be redelivered)
    store, inner = counted()
    pending(inner, "ap-1")
    with pytest.raises(RuntimeError), turn_end.opened(store):  # type: ignore[arg-type]
        the_after_steps(store, approval_id="ap-1", error="tool_timeout")
        raise RuntimeError("send failed: 503")
    # THEN nothing of them was written
    assert dict(store.ops["ingress"]) == {}
    assert session.load_session(inner, ORG, KEY, NOW)["pending_actions"]
    # WHEN the redelivery runs the stage to its end
    with turn_end.opened(store):  # type: ignore[arg-type]
        the_after_steps(store, approval_id="ap-1", error="tool_timeout")
    # THEN the error is counted once, not once per delivery
    doc = session.load_session(inner, ORG, KEY, NOW)
    assert doc["error_count"] == 1 and doc["pending_actions"] == []


def test_plain_writes_alone_are_one_batch_and_nothing_gathered_costs_nothing():
    # GIVEN a job's turn: the reply's history is the only write at the end
    store, _ = counted()
    with turn_end.opened(store):  # type: ignore[arg-type]
        append_message(
            turn_end.deferring(store),
            ORG,
            KEY,
            "t-43-0-out",
            role="assistant",
            text="調べ終わったウル！",
            at=NOW,
            user_id="u-suzuki",
        )
    # THEN one batch, no transaction
    assert dict(store.ops["ingress"]) == {"set_many": 1}
    # AND a stage that gathers nothing asks nothing of the store
    with turn_end.opened(store):  # type: ignore[arg-type]
        pass
    assert dict(store.ops["ingress"]) == {"set_many": 1}


def test_a_part_s_result_reaches_its_step_only_after_the_commit():
    # GIVEN a part whose result the step keeps (the agent state's section)
    store, _ = counted()
    seen: list[str] = []

    def part(txn: Any) -> str:
        doc = txn.get("orgs/acme/agent_states/c1") or {"n": 0}
        txn.set("orgs/acme/agent_states/c1", {"n": doc["n"] + 1})
        return "applied"

    with turn_end.opened(store):  # type: ignore[arg-type]
        turn_end.run(store, part, seen.append)  # type: ignore[arg-type]
        # THEN not before the end
        assert seen == []
    assert seen == ["applied"] and store.get("orgs/acme/agent_states/c1") == {"n": 1}
