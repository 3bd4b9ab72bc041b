"""The heartbeat's self-checks (seed 001 §17.3, issue 38) on the in-process product with a moved
clock: a peer that turns unhealthy is alerted once by name and its recovery recorded; a changed
flags document, policy or persona is alerted once naming the document, the versions and the
changed keys; the memory index is checked a page per tick until a break is found and alerted
once; yesterday's daily log is curated into an episode once per organisation and day, and not
asked for when the nightly job already told it."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from ops_fakes import ORG, ROOM, USER, make_runtime
from test_ops_admin import client

from infra.fake_llm.port import InProcessScriptedLLM
from shared_lib.collections import collection_path
from shared_lib.context.history import append_message
from shared_lib.flags.document import FLAGS_DOC, flags_store_doc, parse_store_doc
from shared_lib.memory.index import chunk_path, index_text, source_path
from shared_lib.ops import due_tasks, self_check_curation, self_check_memory, self_checks
from shared_lib.peers.health import HealthBoard
from shared_lib.ports import PeerHealth

# 10:05 in Tokyo on Thursday 26 November: outside the quiet hours
NOW = datetime(2026, 11, 26, 1, 5, tzinfo=UTC)


class Clock:
    def __init__(self, at: datetime) -> None:
        self.now = at

    def __call__(self) -> datetime:
        return self.now


def runtime(at: datetime = NOW, **services):
    clock = Clock(at)
    return make_runtime(clock=clock, **services), clock


def alerts_of(rt, code: str) -> list[dict]:
    return [d for _, d in rt.store.query("alerts") if d.get("code") == code]


class Peer:
    """A peer whose one cheap probe answers as told."""

    def __init__(self, name: str, healthy: bool) -> None:
        self.name, self.healthy = name, healthy

    def health(self) -> PeerHealth:
        return PeerHealth(healthy=self.healthy, checked_at=NOW, latency_ms=12.0)


# -- peer health --------------------------------------------------------------------------


def test_a_peer_that_turns_unhealthy_is_alerted_once_by_name_and_its_recovery_recorded():
    rt, clock = runtime()
    # GIVEN the configured peer (anthropic) healthy as far as the product knows
    assert self_checks.peer_health(rt, clock()) == {"anthropic": "unknown"}
    # WHEN a call to it fails after its retries (the router marks it) and two ticks look
    HealthBoard(rt.store, clock=clock).mark_unhealthy(
        "anthropic", "llm_unavailable: APIStatusError status=529"
    )
    assert self_checks.peer_health(rt, clock()) == {"anthropic": "unhealthy"}
    clock.now += timedelta(minutes=5)
    self_checks.peer_health(rt, clock())
    # THEN one alert names the peer and why
    (alert,) = alerts_of(rt, "heartbeat.peer_unhealthy")
    assert "anthropic" in alert["message"] and "529" in alert["message"]
    # WHEN a probe finds it answering again
    clock.now += timedelta(minutes=5)
    HealthBoard(rt.store, {"anthropic": Peer("anthropic", True)}, clock=clock).probe("anthropic")
    assert self_checks.peer_health(rt, clock()) == {"anthropic": "healthy"}
    self_checks.peer_health(rt, clock())
    # THEN its recovery is recorded once, with when it went down
    (back,) = alerts_of(rt, "heartbeat.peer_recovered")
    assert "anthropic" in back["message"] and back["severity"] == "info"
    state = rt.store.get(self_checks.PEERS_STATE)["peers"]["anthropic"]
    assert state["healthy"] is True and state["recovered_at"] == clock.now and state["down_since"]
    assert len(alerts_of(rt, "heartbeat.peer_unhealthy")) == 1


# -- configuration changes ------------------------------------------------------------------


def test_a_changed_flags_document_is_alerted_once_naming_the_versions_and_the_keys():
    rt, clock = runtime()
    # GIVEN the configuration the heartbeat saw at its last tick (the first sighting is no change)
    assert self_checks.config_changes(rt, clock())["changes"] == []
    assert alerts_of(rt, "heartbeat.config_changed") == []
    # WHEN an operator stages a flags document with a canary and the kill switch on
    before = parse_store_doc(rt.store.get(FLAGS_DOC))
    after = before.model_copy(update={"version": "2026.11.26-1", "canary_percent": 10, "kill_switch": True})
    rt.store.set(FLAGS_DOC, flags_store_doc(after, updated_by="u-kazu"))
    rt.flags.invalidate()
    clock.now += timedelta(minutes=5)
    seen = self_checks.config_changes(rt, clock())
    clock.now += timedelta(minutes=5)
    again = self_checks.config_changes(rt, clock())
    # THEN one alert names the document, old → new version and exactly the changed keys
    assert [c["keys"] for c in seen["changes"]] == [["canary_percent", "kill_switch", "version"]]
    assert again["changes"] == []
    (alert,) = alerts_of(rt, "heartbeat.config_changed")
    assert f"flags changed: version {before.version} → 2026.11.26-1" in alert["message"]
    assert "canary_percent, kill_switch" in alert["message"]


def test_a_new_policy_version_is_alerted_once_with_both_versions():
    rt, clock = runtime()
    self_checks.config_changes(rt, clock())
    old = self_checks.seen_config(rt)["policy"]["version"]
    # WHEN the admin service restarts on a policy with a lower daily cost threshold
    policy = rt.policy.model_copy(update={"version": rt.policy.version + 1})
    redeployed = replace(rt, policy=policy)
    clock.now += timedelta(minutes=5)
    (change,) = self_checks.config_changes(redeployed, clock())["changes"]
    self_checks.config_changes(redeployed, clock())
    # THEN the alert names the policy and both versions, once
    assert change["document"] == "policy" and change["old"] == old and change["new"] != old
    (alert,) = alerts_of(rt, "heartbeat.config_changed")
    assert f"policy changed: version {old} → {change['new']}" in alert["message"]


# -- the memory index, a page per tick -------------------------------------------------------


def test_the_memory_index_is_checked_a_page_per_tick_and_a_break_alerted_once():
    rt, clock = runtime()
    # GIVEN an organisation that talks, with seven memories indexed, one of which lost a chunk
    append_message(
        rt.store, ORG, f"{ORG}/{ROOM}/{USER}", "m0-in", role="user", text="おはようございます☀️",
        at=clock() - timedelta(hours=1), user_id=USER, room_id=ROOM,
    )  # fmt: skip
    notes = [
        "佐藤さんは火曜在宅",
        "経費は25日締め",
        "来客は1F受付",
        "Wi-Fiは証明書",
        "有給は3日前",
        "会議室Bは工事中",
        "名刺は総務へ",
    ]
    for n, text in enumerate(notes):
        rt.store.set(f"orgs/{ORG}/memories/m-{n}", {"content": text, "user_id": USER})
        index_text(rt.store, rt.embedder, ORG, source_kind="memory", source_id=f"m-{n}", text=text,
                   now=clock() + timedelta(seconds=n), user_id=USER)  # fmt: skip
    broken = rt.store.get(source_path(ORG, "memory", "m-5"))["chunk_ids"][0]
    rt.store.delete(chunk_path(ORG, broken))
    # WHEN ticks check three sources each
    results = []
    for _ in range(3):
        results.append(self_check_memory.run(rt, clock(), page_size=3))
        clock.now += timedelta(minutes=5)
    # THEN the pass takes three ticks, and its end reports the missing chunk and the counts off
    assert [(r["org"], r["sources"], r["pass_done"]) for r in results] == [
        (ORG, 3, False), (ORG, 3, False), (ORG, 1, True),
    ]  # fmt: skip
    assert results[-1]["found"] == {"chunk_missing": 1, "totals": 1}
    (alert,) = alerts_of(rt, "heartbeat.memory_index")
    assert ORG in alert["message"] and "chunk_missing 1" in alert["message"]
    assert f"charter memory check --org {ORG} --repair" in alert["message"]
    # AND the next pass finds it again the same day without a second alert
    for _ in range(3):
        self_check_memory.run(rt, clock(), page_size=3)
    assert len(alerts_of(rt, "heartbeat.memory_index")) == 1


def test_an_index_written_during_a_pass_is_not_taken_for_a_break():
    rt, clock = runtime()
    append_message(
        rt.store, ORG, f"{ORG}/{ROOM}/{USER}", "m0-in", role="user", text="お疲れさまです",
        at=clock() - timedelta(hours=1), user_id=USER, room_id=ROOM,
    )  # fmt: skip
    for n in range(4):
        rt.store.set(f"orgs/{ORG}/memories/m-{n}", {"content": f"メモ{n}です", "user_id": USER})
        index_text(rt.store, rt.embedder, ORG, source_kind="memory", source_id=f"m-{n}", text=f"メモ{n}です",
                   now=clock(), user_id=USER)  # fmt: skip
    # GIVEN a pass under way
    self_check_memory.run(rt, clock(), page_size=2)
    # WHEN a person saves a memory meanwhile (written after the pass's cursor)
    rt.store.set(f"orgs/{ORG}/memories/m-new", {"content": "新しいメモ", "user_id": USER})
    index_text(rt.store, rt.embedder, ORG, source_kind="memory", source_id="m-new", text="新しいメモ",
               now=clock() - timedelta(days=1), user_id=USER)  # fmt: skip
    last = self_check_memory.run(rt, clock(), page_size=5)
    # THEN the pass ends without a finding: the counts were not comparable
    assert last["pass_done"] and last["found"] == {}
    assert alerts_of(rt, "heartbeat.memory_index") == []


# -- daily log curation ---------------------------------------------------------------------


def talked_yesterday(rt, n: int = 4) -> None:
    for i in range(n):
        append_message(
            rt.store, ORG, f"{ORG}/{ROOM}/{USER}", f"y{i:03d}-0-in", role="user",
            text=f"山田商店さんの見積、{i + 1}回目の修正を送りました🙇",
            at=datetime(2026, 11, 25, 9, 0, tzinfo=UTC) + timedelta(minutes=i),  # 18:00 in Tokyo
            user_id=USER, room_id=ROOM,
        )  # fmt: skip


def digests(rt) -> list[dict]:
    return [d for _, d in rt.store.query(collection_path("episodes", org=ORG)) if d["type"] == "daily_digest"]


def test_yesterdays_log_is_curated_into_one_episode_once_per_organisation_and_day():
    rt, clock = runtime(llm=InProcessScriptedLLM())
    # GIVEN an organisation that talked yesterday evening, after the nightly digest had run
    talked_yesterday(rt)
    # WHEN the first tick of the morning and later ticks run
    first = self_check_curation.run(rt, clock())
    clock.now += timedelta(minutes=5)
    second = self_check_curation.run(rt, clock())
    clock.now += timedelta(hours=3)
    third = self_check_curation.run(rt, clock())
    # THEN the first asks the memory target for yesterday's digest of the organisation, once
    assert first == {"day": "2026-11-25", "asked": [ORG], "already": 0}
    assert second["skipped"] == third["skipped"] == "done"
    asked = [a for t, _, a, _ in rt.bus.published if t == "memory" and a.get("job") == "daily_digest"]
    assert [a["job_id"] for a in asked] == [f"daily_digest-{ORG}-2026-11-25-heartbeat"]
    # AND the memory target told the day as one episode
    (digest,) = digests(rt)
    assert digest["date"] == "2026-11-25" and digest["story_text"]


def test_a_day_the_nightly_job_already_told_is_not_asked_for_again():
    rt, clock = runtime(llm=InProcessScriptedLLM())
    talked_yesterday(rt)
    # GIVEN the nightly digest ran at 23:30 yesterday
    clock.now = datetime(2026, 11, 25, 14, 30, tzinfo=UTC)
    assert client(rt).post("/tasks/memory/daily_digest").status_code == 200
    assert len(digests(rt)) == 1
    # WHEN the morning's tick runs THEN it asks for nothing, and no second episode is written
    clock.now = NOW
    assert self_check_curation.run(rt, clock()) == {"day": "2026-11-25", "asked": [], "already": 1}
    assert len(digests(rt)) == 1


def test_the_tick_records_its_self_checks_and_leaves_curation_to_the_waking_hours():
    # GIVEN 02:05 in Tokyo: quiet hours
    rt, _ = runtime(datetime(2026, 11, 25, 17, 5, tzinfo=UTC))
    # WHEN the tick runs THEN peers, configuration and memory are checked, curation waits
    checks = due_tasks.run(rt)["checks"]
    assert set(checks) == {"peers", "config", "memory"}
    # AND at 10:05 the curation runs too, and the tick's record keeps what each check found
    day, _ = runtime()
    result = due_tasks.run(day)
    assert set(result["checks"]) == {"peers", "config", "memory", "curation"}
    claim = day.store.get(f"heartbeat_ticks/{result['tick']}")
    assert set(claim["result"]["checks"]) == set(result["checks"])


def test_memories_the_ttl_took_are_recorded_but_not_alerted():
    rt, clock = runtime()
    append_message(
        rt.store, ORG, f"{ORG}/{ROOM}/{USER}", "m0-in", role="user", text="了解です👍",
        at=clock() - timedelta(hours=1), user_id=USER, room_id=ROOM,
    )  # fmt: skip
    for n in range(3):
        rt.store.set(f"orgs/{ORG}/memories/m-{n}", {"content": f"来月の出張は大阪{n}", "user_id": USER})
        index_text(rt.store, rt.embedder, ORG, source_kind="memory", source_id=f"m-{n}",
                   text=f"来月の出張は大阪{n}", now=clock(), user_id=USER)  # fmt: skip
    # GIVEN Firestore's TTL deleted one memory and its chunks (their manifest and counts stay)
    for cid in rt.store.get(source_path(ORG, "memory", "m-1"))["chunk_ids"]:
        rt.store.delete(chunk_path(ORG, cid))
    rt.store.delete(f"orgs/{ORG}/memories/m-1")
    # WHEN a pass runs THEN it records the expired source and the counts it leaves off, no alert
    result = self_check_memory.run(rt, clock(), page_size=10)
    assert result["found"] == {"expired": 1, "totals": 1}
    assert alerts_of(rt, "heartbeat.memory_index") == []
