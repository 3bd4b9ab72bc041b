"""The masking vault: encrypted, expiring, restorable only for what the user's message held."""

from __future__ import annotations

from datetime import timedelta

import pytest
from brain_fakes import turn
from cryptography.fernet import Fernet

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.brain.vault import restore_parameters, store_vault, vault_cipher, vault_path
from shared_lib.errors import ConfigError
from shared_lib.ids import utc_now

NOW = utc_now()
KEY = Fernet(Fernet.generate_key())


def stored(t, entries, store=None, ttl=30):
    store = store or MemoryStore()
    store_vault(store, t, entries, now=NOW, ttl_minutes=ttl, cipher=KEY)
    return store


def test_given_a_stored_vault_then_the_document_holds_no_value_and_expires():
    t = turn("taro@example.com に連絡")
    store = stored(t, {"[EMAIL_1]": "taro@example.com"})
    doc = store.get(vault_path(t.org_id, t.turn_id))
    assert doc is not None and "taro@example.com" not in str(doc)
    assert doc["expires_at"] == NOW + timedelta(minutes=30) and doc["count"] == 1


def test_given_a_vault_when_the_executor_restores_then_placeholders_of_the_user_become_values():
    t = turn("taro@example.com に連絡")
    store = stored(t, {"[EMAIL_1]": "taro@example.com"})
    params = {"body": "[EMAIL_1] に連絡", "list": ["[EMAIL_1]"], "other": "[EMAIL_2] は文脈だけの値", "n": 3}
    restored = restore_parameters(t, params, store, now=NOW, cipher=KEY)
    assert restored == {
        "body": "taro@example.com に連絡",
        "list": ["taro@example.com"],
        "other": "[EMAIL_2] は文脈だけの値",
        "n": 3,
    }
    assert params["body"] == "[EMAIL_1] に連絡"  # the proposal itself is never changed


class CountingReads(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.reads: list[str] = []

    def get(self, path):
        self.reads.append(path)
        return super().get(path)


def test_given_parameters_without_a_placeholder_when_restoring_then_no_vault_is_read():
    # GIVEN a turn whose message held a value, and a tool call that names none of its placeholders
    t = turn("taro@example.com に連絡、明日10時に打ち合わせ")
    store = stored(t, {"[EMAIL_1]": "taro@example.com"}, store=CountingReads())
    params = {"title": "打ち合わせ 📅", "when": "2026-11-30T10:00", "people": ["田中", "佐藤"], "n": 2}
    store.reads.clear()
    # WHEN the executor restores them THEN they come back as they are, and the vault is not read
    assert restore_parameters(t, params, store, now=NOW, cipher=KEY) == params
    assert store.reads == []
    # AND one placeholder anywhere (here in a list) reads it and restores the value
    assert restore_parameters(t, {"to": ["[EMAIL_1]"]}, store, now=NOW, cipher=KEY) == {
        "to": ["taro@example.com"]
    }
    assert store.reads == [vault_path(t.org_id, t.turn_id)]


def test_given_an_expired_vault_when_restoring_then_nothing_is_restored():
    t = turn("x")
    store = stored(t, {"[EMAIL_1]": "taro@example.com"}, ttl=15)
    later = NOW + timedelta(minutes=16)
    assert restore_parameters(t, {"a": "[EMAIL_1]"}, store, now=later, cipher=KEY) == {"a": "[EMAIL_1]"}


def test_given_the_wrong_key_when_restoring_then_nothing_is_restored():
    t = turn("x")
    store = stored(t, {"[EMAIL_1]": "taro@example.com"})
    other = Fernet(Fernet.generate_key())
    assert restore_parameters(t, {"a": "[EMAIL_1]"}, store, now=NOW, cipher=other) == {"a": "[EMAIL_1]"}


def test_given_two_steps_of_a_turn_when_storing_then_the_vault_is_merged():
    t = turn("x")
    store = stored(t, {"[EMAIL_1]": "a@example.com"})
    stored(t, {"[PHONE_1]": "090-1234-5678"}, store)
    restored = restore_parameters(t, {"a": "[EMAIL_1] [PHONE_1]"}, store, now=NOW, cipher=KEY)
    assert restored == {"a": "a@example.com 090-1234-5678"}


def test_given_a_shadow_copy_when_storing_then_it_never_touches_the_served_turns_vault():
    served = turn("x")
    shadow = served.model_copy(update={"shadow": True})
    store = stored(shadow, {"[EMAIL_1]": "a@example.com"})
    assert store.get(vault_path(served.org_id, served.turn_id)) is None
    assert restore_parameters(served, {"a": "[EMAIL_1]"}, store, now=NOW, cipher=KEY) == {"a": "[EMAIL_1]"}


def test_given_an_approved_confirmation_when_restoring_then_the_asking_turns_vault_is_used():
    # GIVEN the turn that asked for confirmation stored its vault
    asking = turn("全員に taro@example.com を周知して")
    store = stored(asking, {"[EMAIL_1]": "taro@example.com"})
    # WHEN a later turn approves it
    approving = turn("はい")
    approving.context.pending_action = {"approval_id": "ap-1", "turn_id": asking.turn_id}
    approving.proposal.approval = {"approval_id": "ap-1", "approved": True}
    restored = restore_parameters(approving, {"message": "[EMAIL_1]"}, store, now=NOW, cipher=KEY)
    # THEN
    assert restored == {"message": "taro@example.com"}
    # AND without the approval nothing of the other turn is used
    approving.proposal.approval = {"approval_id": "ap-1", "approved": False}
    assert restore_parameters(approving, {"message": "[EMAIL_1]"}, store, now=NOW, cipher=KEY) == {
        "message": "[EMAIL_1]"
    }


def test_given_environments_when_choosing_a_key_then_production_needs_an_explicit_key():
    assert vault_cipher("test", None) is not None and vault_cipher("demo", None) is not None
    assert vault_cipher("prod", None) is None
    new, old = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    rotated = vault_cipher("prod", f"{new},{old}")
    assert rotated is not None
    # a rotation keeps the old key readable while new vaults are written with the new one
    assert rotated.decrypt(Fernet(old.encode()).encrypt(b"v")) == b"v"
    assert Fernet(new.encode()).decrypt(rotated.encrypt(b"w")) == b"w"
    with pytest.raises(ConfigError):
        vault_cipher("prod", "not-a-key")
    assert (
        store_vault(MemoryStore(), turn("x"), {"[EMAIL_1]": "a"}, now=NOW, ttl_minutes=30, cipher=None)
        is False
    )
