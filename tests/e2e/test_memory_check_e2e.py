"""The memory index check finds and repairs a deliberately broken entry on the whole local stack
(issue 38, seed 001 §17.3 メモリ: インデックスの整合性チェック): a person asks the assistant to
remember something through a webhook, the turn saves it and the index makes its chunks; then one
of its chunks and the postings of its terms are deleted on the emulator, as a bad hand edit or a
partial restore would. ``charter memory check``, run in the stack's work folder as an operator
runs it, reports the missing chunk under its memory and the statistics out of step; ``--repair``
indexes the memory again from its document, and the person's search finds it again; a second
check finds nothing."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from shared_lib.collections import collection_path
from shared_lib.memory.index import chunk_path, df_name, source_path, stats_path
from shared_lib.memory.keyword import bucket

ORG, USER = "demo", "u-suzuki"


def replies_in(stack: Any, room: str) -> int:
    return sum(
        1
        for s in stack.fake_channel_sent()
        if s.get("channel") == "http" and room in json.dumps(s.get("body"), ensure_ascii=False)
    )


def memory_of(stack: Any, word: str) -> tuple[str, dict[str, Any]] | None:
    """The person's saved memory naming ``word`` once the index holds its chunks and its event
    episode (the memory target's) is indexed too: nothing left to write behind the check."""
    rows = stack.store.query(collection_path("memories", org=ORG), where=[("user_id", "==", USER)])
    mid = next((m for m, d in rows if word in str(d.get("content"))), None)
    if mid is None or stack.store.get(source_path(ORG, "memory", mid)) is None:
        return None
    episodes = stack.store.query(collection_path("episodes", org=ORG), limit=None)
    told = [e for e, d in episodes if word in json.dumps(d, ensure_ascii=False, default=str)]
    if not told or not all(stack.store.get(source_path(ORG, "episode", e)) for e in told):
        return None
    return mid, stack.store.get(source_path(ORG, "memory", mid)) or {}


def check(stack: Any, *extra: str) -> tuple[int, dict[str, Any]]:
    out = stack.charter("memory", "check", "--org", ORG, "--json", *extra)
    assert out.returncode in (0, 1), out.stderr[-2000:]
    return out.returncode, json.loads(out.stdout)


def found_by_search(stack: Any, mid: str, query: str) -> bool:
    out = stack.charter("memory", "search", "--org", ORG, "--as", USER, "--kind", "memory", query, "--json")
    assert out.returncode == 0, out.stderr[-2000:]
    return any(h["source_id"] == mid for h in json.loads(out.stdout)["hits"])


@pytest.mark.e2e
def test_the_memory_check_finds_and_repairs_a_deliberately_broken_index_entry(local_stack):
    stack, tag = local_stack, uuid.uuid4().hex[:6]
    room, word = f"room-memchk-{tag}", f"ミーティングルーム{tag}"
    # GIVEN a person asked the assistant to remember something, through the webhook
    said = f"覚えておいて：毎週水曜の定例は{word}（3階の奥）でやります🙆‍♀️"
    resp = stack.send("http", said, org=ORG, room=room, user=USER)
    assert resp.status == 200, resp.body
    stack.wait_for(lambda: replies_in(stack, room) >= 1, what="the reply to the memory")
    mid, manifest = stack.wait_for(
        lambda: memory_of(stack, word), progress=lambda: stack.claims(ORG, str(resp.body["turn_ids"][0])),
        what="the memory saved and indexed, its event episode too",
    )  # fmt: skip
    assert found_by_search(stack, mid, word)
    # AND the organisation's index has nothing to report
    code, before = check(stack)
    assert (code, before["findings"]) == (0, []), before

    # WHEN one of its chunks and the postings table of its first term are deleted on the emulator
    cid = str(manifest["chunk_ids"][0])
    chunk = stack.store.get(chunk_path(ORG, cid)) or {}
    table = df_name(bucket(str(chunk["terms"][0])))
    stack.store.delete(chunk_path(ORG, cid))
    stack.store.delete(stats_path(ORG, table))
    assert not found_by_search(stack, mid, word)

    # THEN the operator's check reports the missing chunk under its memory, and the postings
    code, broken = check(stack)
    assert code == 1
    missing = [f for f in broken["findings"] if f["problem"] == "chunk_missing"]
    assert [(f["source_kind"], f["source_id"], f["chunk_id"]) for f in missing] == [("memory", mid, cid)]
    assert any(f["problem"] == "postings" and table in f["detail"] for f in broken["findings"]), broken
    plain = stack.charter("memory", "check", "--org", ORG)
    assert plain.returncode == 1 and "chunk_missing" in plain.stdout and mid in plain.stdout

    # WHEN the operator repairs it
    code, fixed = check(stack, "--repair")
    # THEN the memory is indexed again from its document, nothing is left, and search finds it again
    assert code == 0, fixed
    assert fixed["repaired"]["reindexed_sources"] == 1 and fixed["after"]["findings"] == []
    assert stack.store.get(chunk_path(ORG, cid)) is not None
    assert found_by_search(stack, mid, word)
    # AND checking (and repairing) again finds and changes nothing
    code, again = check(stack, "--repair")
    assert (code, again["findings"], again["repaired"]) == (0, [], None)
