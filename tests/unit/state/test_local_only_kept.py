"""/local is kept for the conversation until /cloud, in its own document; a conversation switched
to /local while the session still kept the mode stays local-only (fail closed) until /cloud."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.collections import session_path
from shared_lib.state.local_only import write_local_only as set_local_only
from shared_lib.state.session import load_session

ORG, KEY = "acme", "acme/r1/u1"
MONDAY_NIGHT = datetime(2026, 11, 30, 13, 40, tzinfo=UTC)  # 22:40 in Tokyo


def test_a_session_that_kept_local_only_before_its_own_document_stays_local_until_cloud():
    # GIVEN a live session written when the session itself kept /local (no document of its own)
    store = MemoryStore()
    later = MONDAY_NIGHT + timedelta(minutes=10)
    store.set(session_path(ORG, KEY), {"mode": "normal", "local_only": True, "expires_at": later})
    # WHEN the conversation's next turn reads it
    # THEN it is still local-only: no cloud LLM for it
    assert load_session(store, ORG, KEY, MONDAY_NIGHT)["local_only"] is True
    # WHEN the person sends /cloud
    set_local_only(store, ORG, KEY, False, MONDAY_NIGHT, turn_id="t-cloud", at=MONDAY_NIGHT)
    # THEN the conversation's own document decides, whatever the old session said
    assert "local_only" not in load_session(store, ORG, KEY, MONDAY_NIGHT)


def test_local_outlives_the_session_and_cloud_ends_it():
    store = MemoryStore()
    set_local_only(store, ORG, KEY, True, MONDAY_NIGHT, turn_id="t-local", at=MONDAY_NIGHT)
    next_morning = MONDAY_NIGHT + timedelta(hours=11)
    assert load_session(store, ORG, KEY, next_morning)["local_only"] is True
    set_local_only(store, ORG, KEY, False, next_morning, turn_id="t-cloud", at=next_morning)
    assert "local_only" not in load_session(store, ORG, KEY, next_morning)
