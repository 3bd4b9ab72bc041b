"""Runtime overrides: expiry, author, reason, audit, the guard's 'unless stricter' rule, and the
per-organisation rollbacks beside the global part."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.errors import ConfigError
from shared_lib.flags import AUDIT_COLLECTION, OVERRIDE_DOC, FlagsOverride
from shared_lib.rollout.overrides import (
    audit_entries,
    clear_override,
    read_override,
    write_org_override,
    write_override,
)

NOW = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)


def test_given_an_override_when_written_then_it_carries_expiry_author_reason_and_is_audited():
    store = MemoryStore()
    written = write_override(
        store, brain_mode="legacy", ttl=timedelta(minutes=30), author="kazu", reason="errors up", now=NOW
    )
    assert written == read_override(store)
    assert written.expires_at == NOW + timedelta(minutes=30) and written.created_at == NOW
    (entry,) = audit_entries(store)
    assert (entry["action"], entry["author"], entry["reason"], entry["previous"]) == (
        "override_set",
        "kazu",
        "errors up",
        None,
    )
    assert entry["override"]["brain_mode"] == "legacy"


def test_given_an_override_when_replaced_then_the_audit_keeps_the_previous_one():
    store = MemoryStore()
    write_override(store, brain_mode="canary", ttl=timedelta(hours=1), author="a", reason="first", now=NOW)
    write_override(store, kill_switch=True, ttl=timedelta(hours=1), author="b", reason="second", now=NOW)
    newest = audit_entries(store)[0]
    assert newest["previous"]["brain_mode"] == "canary" and newest["override"]["kill_switch"] is True


@pytest.mark.parametrize(
    ("active", "requested", "written"),
    [
        ({"brain_mode": "legacy"}, {"brain_mode": "legacy"}, False),
        ({"kill_switch": True}, {"brain_mode": "legacy"}, False),
        ({"brain_mode": "llm"}, {"brain_mode": "legacy"}, True),
        (None, {"brain_mode": "legacy"}, True),
    ],
)
def test_given_an_active_override_when_the_guard_writes_unless_stricter_then_only_a_stricter_one_lands(
    active, requested, written
):
    store = MemoryStore()
    if active:
        write_override(store, ttl=timedelta(hours=1), author="ops", reason="before", now=NOW, **active)
    result = write_override(
        store,
        ttl=timedelta(hours=1),
        author="rollback-guard",
        reason="trip",
        now=NOW,
        unless_stricter_active=True,
        **requested,
    )
    assert (result is not None) is written
    assert len(store.query(AUDIT_COLLECTION)) == (1 if active else 0) + (1 if written else 0)


def test_given_an_expired_legacy_override_when_the_guard_trips_then_it_is_replaced():
    store = MemoryStore()
    write_override(store, brain_mode="legacy", ttl=timedelta(minutes=1), author="g", reason="old", now=NOW)
    later = NOW + timedelta(minutes=5)
    assert (
        write_override(
            store,
            brain_mode="legacy",
            ttl=timedelta(hours=1),
            author="g",
            reason="new",
            now=later,
            unless_stricter_active=True,
        )
        is not None
    )


def test_given_no_override_when_cleared_then_nothing_is_audited():
    store = MemoryStore()
    assert clear_override(store, "kazu", "nothing to do") is False
    assert store.query(AUDIT_COLLECTION) == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"ttl": timedelta(hours=1)}, "brain_mode, kill_switch"),
        ({"brain_mode": "legacy", "ttl": timedelta(0)}, "ttl"),
        ({"brain_mode": "legacy", "ttl": timedelta(days=31)}, "ttl"),
    ],
)
def test_given_a_bad_request_when_writing_then_config_error(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        write_override(MemoryStore(), author="a", reason="r", **kwargs)


def test_given_a_stored_override_when_read_then_the_schema_matches_what_evaluation_reads():
    store = MemoryStore()
    write_override(
        store, kill_switch=True, brain_mode="legacy", ttl=timedelta(hours=1), author="a", reason="r", now=NOW
    )
    assert FlagsOverride.model_validate(store.get(OVERRIDE_DOC)).kill_switch is True


def test_given_an_organisation_rollback_when_written_then_it_has_its_own_expiry_author_reason_and_is_audited():
    store = MemoryStore()
    written = write_org_override(
        store, "acme", ttl=timedelta(hours=2), author="rollback-guard", reason="llm errors", now=NOW
    )
    entry = written.orgs["acme"]
    assert (entry.brain_mode, entry.author, entry.reason) == ("legacy", "rollback-guard", "llm errors")
    assert entry.expires_at == NOW + timedelta(hours=2) and entry.created_at == NOW
    # the global part sets nothing; the document's own expiry is its organisations' latest
    assert (written.brain_mode, written.kill_switch, written.expires_at) == (None, None, entry.expires_at)
    assert read_override(store) == written
    (audit,) = audit_entries(store)
    assert (audit["action"], audit["org_id"], audit["reason"]) == ("org_override_set", "acme", "llm errors")


def test_given_organisation_rollbacks_when_the_global_part_is_written_then_the_active_ones_are_kept():
    # GIVEN acme rolled back for 2 h and beta for 10 min
    store = MemoryStore()
    write_org_override(store, "acme", ttl=timedelta(hours=2), author="g", reason="a", now=NOW)
    write_org_override(store, "beta", ttl=timedelta(minutes=10), author="g", reason="b", now=NOW)
    # WHEN an operator writes the global part after beta's rollback expired
    later = NOW + timedelta(minutes=30)
    written = write_override(
        store, brain_mode="llm", ttl=timedelta(hours=1), author="kazu", reason="go", now=later
    )
    # THEN acme's rollback stays, beta's is dropped
    assert written.brain_mode == "llm" and set(written.orgs) == {"acme"}
    assert set(read_override(store).orgs) == {"acme"}


def test_given_a_global_part_when_an_organisation_is_rolled_back_then_the_global_part_is_kept():
    store = MemoryStore()
    write_override(
        store, brain_mode="canary", ttl=timedelta(hours=1), author="kazu", reason="canary", now=NOW
    )
    written = write_org_override(store, "acme", ttl=timedelta(hours=2), author="g", reason="a", now=NOW)
    assert (written.brain_mode, written.author, written.expires_at) == (
        "canary",
        "kazu",
        NOW + timedelta(hours=1),
    )
    assert set(written.orgs) == {"acme"}


@pytest.mark.parametrize(
    ("before", "written"),
    [
        ({"brain_mode": "legacy"}, False),
        ({"kill_switch": True}, False),
        ({"org": "acme"}, False),
        ({"org": "beta"}, True),
        ({"brain_mode": "llm"}, True),
        (None, True),
    ],
)
def test_given_an_active_override_when_the_guard_rolls_an_organisation_back_unless_stricter_then_only_new_ones_land(
    before, written
):
    store = MemoryStore()
    if before and "org" in before:
        write_org_override(store, before["org"], ttl=timedelta(hours=1), author="g", reason="before", now=NOW)
    elif before:
        write_override(store, ttl=timedelta(hours=1), author="ops", reason="before", now=NOW, **before)
    result = write_org_override(
        store, "acme", ttl=timedelta(hours=1), author="g", reason="trip", now=NOW, unless_stricter_active=True
    )
    assert (result is not None) is written


def test_given_organisation_rollbacks_when_the_override_is_cleared_then_they_end_too():
    store = MemoryStore()
    write_org_override(store, "acme", ttl=timedelta(hours=2), author="g", reason="a", now=NOW)
    assert clear_override(store, "kazu", "fixed", now=NOW) is True
    assert read_override(store) is None


@pytest.mark.parametrize(
    ("org", "ttl", "message"),
    [
        ("", timedelta(hours=1), "organisation"),
        ("acme", timedelta(0), "ttl"),
        ("acme", timedelta(days=31), "ttl"),
    ],
)
def test_given_a_bad_organisation_rollback_when_writing_then_config_error(org, ttl, message):
    with pytest.raises(ConfigError, match=message):
        write_org_override(MemoryStore(), org, ttl=ttl, author="a", reason="r")
