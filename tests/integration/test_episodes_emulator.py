"""Episodes and tags on the Firestore emulator: the queries the jobs make (a day's messages by
time, items due by ``tags_checked_at``, ``array_contains`` on tags and people), merge-writes of
tag maps whose keys hold any character, and the once-only keys, as Firestore runs them."""

from __future__ import annotations

import pytest

from infra.fake_llm import scripted as scripted_model
from infra.fake_llm.scenario import MessagesRequest
from shared_lib.cli.data import purge
from shared_lib.memory.episodes import daily_digest, list_episodes
from shared_lib.memory.tagging import run_tagging
from shared_lib.memory.tags import search_by_tags, trending_tags
from shared_lib.persona.catalogue import load_persona
from shared_lib.ports import LLMRequest, LLMResponse
from tests.unit.memory.episode_fakes import (
    DAY,
    MODEL,
    NOW,
    ONE_DAY,
    ORG,
    PEOPLE,
    RETENTION,
    busy_day,
    chunk,
    put,
    scripted,
)

pytestmark = pytest.mark.integration


def fake(request: LLMRequest) -> LLMResponse:
    reply = scripted_model.answer(MessagesRequest(request.model_dump()))
    return LLMResponse(content=reply.content, stop_reason=reply.stop_reason, model=request.model)


def test_a_day_told_tagged_and_found_on_firestore(firestore_store):
    store = firestore_store
    for user_id, name in PEOPLE.items():
        store.set(f"orgs/{ORG}/users/{user_id}", {"name": name})
    busy_day(store)
    llm = scripted(default=fake)
    # the digest reads the day's messages only, once
    first = daily_digest(store, llm, load_persona(), ORG, DAY, NOW, MODEL, retention=RETENTION)
    again = daily_digest(store, llm, load_persona(), ORG, DAY, NOW, MODEL, retention=RETENTION)
    assert (first.status, again.status) == ("written", "exists")
    assert first.episode is not None and first.episode.metadata.characters == ["鈴木", "田中"]
    assert [eid for eid, _ in list_episodes(store, ORG, day=DAY)] == [first.episode_id]
    # tags with any character in their name survive merge-writes of the tag map
    k1 = chunk(store, "k1", "見積書の書き方と Node.js の見積書ツール")
    put(store, k1, ("Node.js", 0.9), ("a`b", 0.8))
    assert store.get(k1)["tag_scores"]["Node.js"]["confidence"] == 0.9
    # the job finds what is due by tags_checked_at and tags it
    outcome = run_tagging(store, llm, ORG, NOW, MODEL)
    assert outcome.status == "completed" and outcome.items_processed == 2
    assert {h.path.rsplit("/", 1)[-1] for h in search_by_tags(store, ORG, ["見積書"])} == {
        "k1",
        first.episode_id,
    }
    assert [
        h.path.rsplit("/", 1)[-1] for h in search_by_tags(store, ORG, ["見積書", "Node.js"], mode="and")
    ] == ["k1"]
    # 見積書: on the episode when told and again by the job, and on the chunk
    assert trending_tags(store, ORG, days=7, limit=5, now=NOW + ONE_DAY)[0] == ("見積書", 3)
    assert run_tagging(store, llm, ORG, NOW, MODEL).status == "skipped"
    # a person's purge finds the episode they are in
    assert purge(store, ORG, "u-tanaka")["episodes"] == 1
