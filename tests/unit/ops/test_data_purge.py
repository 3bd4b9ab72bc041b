"""``charter data purge``: a person's data deleted everywhere in the store, counted per
collection; another person's data untouched; ``--dry-run`` changes nothing."""

from __future__ import annotations

import json
import os

import pytest
from ops_fakes import ORG, TASK_CREATE, USER, make_runtime, send

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.cli import main as charter
from shared_lib.cli.data import PURGED, person_documents, purge
from shared_lib.collections import of_path
from shared_lib.features.heartbeat_tasks import store as hb_store
from shared_lib.features.heartbeat_tasks.state_schedule import read
from shared_lib.privacy.sealing import SEALED_FIELD
from shared_lib.runtime import Runtime
from shared_lib.telemetry.llm_calls import LLMCallLog

OTHER = "u-tanaka"
SUZUKI_SAYS = [
    "覚えておいて：私のメールは suzuki@example.com です",
    TASK_CREATE,
    "全員に明日の全体会議は10時からとアナウンスして",  # leaves a pending action in the session
]
TANAKA_SAYS = ["覚えておいて：私はコーヒーはブラック派"]


def converse(rt: Runtime) -> None:
    for text in SUZUKI_SAYS:
        send(rt, text)
    for text in TANAKA_SAYS:
        send(rt, text, user=OTHER, room="room-tanaka")


def mentions(doc: dict, user: str) -> bool:
    text = json.dumps(doc, ensure_ascii=False, default=str)
    return f'"{user}"' in text or f"/{user}" in text


def personal(rt: Runtime, user: str) -> list[str]:
    """Paths of personal-data documents (retention collections, sessions, receipts, vaults) naming ``user``."""
    kinds = {"sessions", "receipts", "vaults"}
    return sorted(
        p
        for p, d in rt.store.dump().items()  # type: ignore[attr-defined]
        if (e := of_path(p)) is not None and (e.retention == "org" or e.name in kinds) and mentions(d, user)
    )


@pytest.fixture
def rt(scripted_llm, clock) -> Runtime:
    store = MemoryStore()  # the LLM call log writes to the same store as the chain
    runtime = make_runtime(llm=LLMCallLog(scripted_llm, store, clock=clock), clock=clock, store=store)
    converse(runtime)
    return runtime


def test_a_dry_run_counts_everything_of_the_person_and_deletes_nothing(rt):
    before = rt.store.dump()  # type: ignore[attr-defined]
    counts = purge(rt.store, ORG, USER, dry_run=True)
    assert rt.store.dump() == before  # type: ignore[attr-defined]
    assert set(counts) == set(PURGED)
    for name in (
        "messages",
        "conversations",
        "sessions",
        "agent_states",
        "memories",
        "tasks",
        "receipts",
        "vaults",
        "ft_candidates",  # the demo organisation stages fine-tuning data (seed 001 §29)
        "ft_ledgers",
    ):
        assert counts[name] > 0, (name, counts)
    assert counts["observability"] == len(SUZUKI_SAYS) and counts["llm_calls"] > 0


def test_a_purge_deletes_the_persons_data_everywhere_and_only_theirs(rt):
    # GIVEN both people's data in the store
    assert personal(rt, USER) and personal(rt, OTHER)
    tanaka_before = {p: d for p, d in rt.store.dump().items() if p in personal(rt, OTHER)}  # type: ignore[attr-defined]
    # WHEN Suzuki's data is purged
    counts = purge(rt.store, ORG, USER)
    # THEN nothing of Suzuki's is left, and the counts say what went
    assert personal(rt, USER) == []
    assert sum(counts.values()) > 0
    # AND Tanaka's data is as it was (the task Suzuki gave him was Suzuki's too: it went)
    left = {p: d for p, d in rt.store.dump().items() if p in tanaka_before}  # type: ignore[attr-defined]
    assert {p for p in tanaka_before if "/tasks/" not in p} == set(left)
    # AND a second purge finds nothing
    assert sum(purge(rt.store, ORG, USER).values()) == 0


def test_the_purge_finds_history_written_before_conversation_documents_existed(rt):
    # GIVEN history whose conversation documents are gone (older releases wrote none)
    for path in person_documents(rt.store, ORG, USER)["conversations"]:
        rt.store.delete(path)
    # THEN the records' conversation keys still lead to the messages
    assert purge(rt.store, ORG, USER)["messages"] > 0
    assert not [p for p in rt.store.dump() if "/messages/" in p and mentions(rt.store.get(p), USER)]  # type: ignore[attr-defined]


def test_the_command_prints_counts_and_the_bigquery_job(tmp_path, scripted_llm, clock, capsys):
    # GIVEN a store the operator command can open
    path = tmp_path / "charter.sqlite"
    runtime = make_runtime(
        llm=scripted_llm, clock=clock, env={"CHARTER_STORE": "sqlite", "CHARTER_STORE_PATH": str(path)}
    )
    converse(runtime)
    # WHEN the operator dry-runs, then purges
    assert (
        charter(["data", "purge", "--org", ORG, "--user", USER, "--dry-run", "--json", "--store", str(path)])
        == 0
    )
    planned = json.loads(capsys.readouterr().out)
    assert charter(["data", "purge", "--org", ORG, "--user", USER, "--json", "--store", str(path)]) == 0
    done = json.loads(capsys.readouterr().out)
    # THEN the counts match, and the BigQuery job names the person
    assert planned["dry_run"] and not done["dry_run"]
    assert planned["counts"] == done["counts"] and done["total"] > 0
    assert "DELETE FROM `charter_observability.turn_events`" in done["bigquery_job"]
    assert f"--parameter=user:STRING:{USER}" in done["bigquery_job"]
    # AND the text form says what was deleted
    assert charter(["data", "purge", "--org", ORG, "--user", USER, "--store", str(path)]) == 0
    assert f"deleted 0 document(s) of {USER} in {ORG}" in capsys.readouterr().out


@pytest.mark.parametrize("who", [["--org", "a/b", "--user", "u"], ["--org", "acme", "--user", " "]])
def test_bad_input_exits_2(who, capsys):
    assert charter(["data", "purge", *who, "--store", "memory"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_without_a_store_the_command_exits_2_with_one_line(monkeypatch, tmp_path, capsys):
    for var in list(os.environ):
        if var.startswith(("CHARTER_", "FIRESTORE_", "PUBSUB_", "GOOGLE_")):
            monkeypatch.delenv(var)
    monkeypatch.chdir(tmp_path)
    assert charter(["data", "purge", "--org", ORG, "--user", USER]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "no store configured" in line


def test_a_purge_takes_the_sealed_values_with_the_person(rt):
    # GIVEN the person's memory (its address), its search chunk and their task, stored sealed
    def sealed_of(user: str) -> set[str]:
        return {
            of_path(p).name  # type: ignore[union-attr]
            for p, d in rt.store.dump().items()  # type: ignore[attr-defined]
            if d.get(SEALED_FIELD) and mentions(d, user)
        }

    assert {"memories", "memory_chunks"} <= sealed_of(USER)
    # WHEN they are purged
    purge(rt.store, ORG, USER)
    # THEN no sealed value of theirs is left anywhere (it lived in the documents purged)
    assert sealed_of(USER) == set()


def test_a_purge_stops_the_periodic_tasks_the_person_gave_and_keeps_the_others(rt):
    # GIVEN a weekly task each person gave the heartbeat
    for task_id, user in (("hb-suzuki", USER), ("hb-tanaka", OTHER)):
        doc = hb_store.new_task(
            task_id=task_id,
            org_id=ORG,
            creator=user,
            instruction="毎週の締め切りをチームに共有して",
            schedule=read("毎週月曜9時"),
            where={"channel": "http", "room_id": f"room-{user}"},
            now=rt.clock(),
            created_by=user,
            cipher=rt.cipher(ORG),
        )
        rt.store.set(hb_store.task_path(ORG, task_id), doc)
    # WHEN Suzuki's data is purged
    counts = purge(rt.store, ORG, USER)
    # THEN Suzuki's task is gone (its runs would be Suzuki's turns), Tanaka's stays
    assert counts["heartbeat_tasks"] == 1
    assert [t["task_id"] for t in hb_store.list_tasks(rt.store, ORG)] == ["hb-tanaka"]
