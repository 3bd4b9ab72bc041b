"""Session state (seed 000 §5.1.5–5.1.6): modes, transactions, 30-minute sessions and
10-minute pending actions with automatic return to normal."""

from __future__ import annotations

from datetime import timedelta

import pytest

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.state import session
from tests.unit.policy.policy_fakes import NOW

ORG, KEY = "acme", "acme/r1/u1"


def pending(approval_id: str = "ap-AAAAAA") -> dict[str, object]:
    return {"approval_id": approval_id, "user_id": "u1", "confirmations_received": 0}


def read(store: MemoryStore, minutes: float = 0) -> dict[str, object]:
    return session.load_session(store, ORG, KEY, NOW + timedelta(minutes=minutes))


class CountingStore(MemoryStore):
    transactions = 0

    def run_transaction(self, fn):  # type: ignore[no-untyped-def]
        self.transactions += 1
        return super().run_transaction(fn)


def test_a_new_conversation_is_normal():
    assert read(MemoryStore()) == {"mode": "normal"}


def test_asking_puts_the_conversation_in_confirmation_pending_within_a_transaction():
    store = CountingStore()
    session.set_pending(store, ORG, KEY, pending(), NOW)
    doc = read(store)
    assert doc["mode"] == "confirmation_pending"
    assert doc["pending_action"]["approval_id"] == "ap-AAAAAA"
    assert doc["pending_action"]["expires_at"] == NOW + timedelta(minutes=10)
    assert doc["expires_at"] == NOW + timedelta(minutes=30)
    assert store.transactions == 1


@pytest.mark.parametrize(("minutes", "alive"), [(9.99, True), (10, False), (29, False)])
def test_a_pending_action_expires_after_ten_minutes(minutes, alive):
    store = MemoryStore()
    session.set_pending(store, ORG, KEY, pending(), NOW)
    doc = read(store, minutes)
    if alive:
        assert doc["mode"] == "confirmation_pending" and doc["pending_action"]
    else:
        assert doc["mode"] == "normal" and doc["pending_action"] is None
        assert doc["pending_expired"] is True and doc["expired_approval_id"] == "ap-AAAAAA"


@pytest.mark.parametrize(("minutes", "alive"), [(29.99, True), (30, False)])
def test_a_session_expires_thirty_minutes_after_its_last_update(minutes, alive):
    store = MemoryStore()
    session.touch(store, ORG, KEY, NOW, last_intent="tool_call")
    doc = read(store, minutes)
    assert (doc.get("last_intent") == "tool_call") is alive
    assert doc.get("expired", False) is not alive


def test_an_expired_session_with_a_pending_action_says_both():
    store = MemoryStore()
    session.set_pending(store, ORG, KEY, pending(), NOW)
    assert read(store, 31) == {
        "mode": "normal",
        "expired": True,
        "pending_expired": True,
        "expired_approval_id": "ap-AAAAAA",
        "expired_approval_ids": ["ap-AAAAAA"],
    }


def test_the_next_write_drops_an_expired_pending_action():
    store = MemoryStore()
    session.set_pending(store, ORG, KEY, pending(), NOW)
    later = NOW + timedelta(minutes=11)
    session.touch(store, ORG, KEY, later, last_intent="text_response")
    doc = session.load_session(store, ORG, KEY, later)
    assert doc["mode"] == "normal" and doc["pending_action"] is None and "pending_expired" not in doc


def test_only_the_named_pending_action_is_resolved():
    store = MemoryStore()
    session.set_pending(store, ORG, KEY, pending("ap-NEW000"), NOW)
    assert session.resolve_pending(store, ORG, KEY, "ap-OLD000", NOW) is False
    assert read(store)["pending_action"]["approval_id"] == "ap-NEW000"
    assert session.resolve_pending(store, ORG, KEY, "ap-NEW000", NOW, outcome="approved") is True
    doc = read(store)
    assert doc["mode"] == "normal" and doc["pending_action"] is None
    assert doc["last_resolution"]["outcome"] == "approved"


def test_a_second_answer_is_counted_once():
    store = MemoryStore()
    session.set_pending(store, ORG, KEY, pending(), NOW)
    assert session.advance_pending(store, ORG, KEY, "ap-AAAAAA", NOW, confirmations=1) is True
    assert session.advance_pending(store, ORG, KEY, "ap-AAAAAA", NOW, confirmations=1) is True  # redelivery
    assert session.advance_pending(store, ORG, KEY, "ap-OTHER0", NOW, confirmations=1) is False
    assert session.advance_pending(store, ORG, KEY, "ap-AAAAAA", NOW, confirmations=3) is False
    assert read(store)["pending_action"]["confirmations_received"] == 1


def test_touch_keeps_a_live_pending_action_pending():
    store = MemoryStore()
    session.set_pending(store, ORG, KEY, pending(), NOW)
    session.touch(store, ORG, KEY, NOW, mode="normal", last_intent="text_response")
    assert read(store)["mode"] == "confirmation_pending"


def test_errors_move_to_error_recovery_and_success_back_to_normal():
    store = MemoryStore()
    session.finish_turn(store, ORG, KEY, NOW, error_code="execution_error")
    session.finish_turn(store, ORG, KEY, NOW, error_code="validation_error")
    doc = read(store)
    assert (doc["mode"], doc["error_count"], doc["last_error"]) == ("error_recovery", 2, "validation_error")
    session.finish_turn(store, ORG, KEY, NOW, error_code=None, last_intent="tool_call")
    assert (read(store)["mode"], read(store)["error_count"]) == ("normal", 0)


def test_mode_transitions_are_checked():
    store = MemoryStore()
    session.set_mode(store, ORG, KEY, "multi_step_flow", NOW, step=1)
    assert read(store)["mode"] == "multi_step_flow"
    session.set_pending(store, ORG, KEY, pending(), NOW)
    with pytest.raises(session.InvalidTransition):
        session.set_mode(store, ORG, KEY, "multi_step_flow", NOW)
    assert read(store)["mode"] == "confirmation_pending"  # nothing written by the refused change


def test_sessions_are_kept_per_conversation():
    store = MemoryStore()
    session.set_pending(store, ORG, KEY, pending(), NOW)
    assert session.load_session(store, ORG, "acme/r1/u2", NOW) == {"mode": "normal"}
