"""Flags on the Firestore emulator: re-seeding the file flips the kill switch within the
cache period without a redeploy; ``charter flags`` reads the live document; the fail-safe."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

# The same fakes as the unit tests of the rollout (a scripted LLM, clocks, a seeded runtime).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit" / "rollout"))

from rollout_fakes import ORG, ScriptedLLM, Ticker, make_runtime, replies, send, write_flags

from shared_lib.cli import main
from shared_lib.flags import FLAGS_DOC, FlagsProvider, bucket_fine, load_flags_file, seed_flags

pytestmark = pytest.mark.integration
TASK = "田中さんに見積書を作成するタスクを明日までにお願い"


def test_given_the_emulator_when_the_kill_switch_is_flipped_in_the_file_and_reseeded_then_it_applies_within_the_ttl(
    tmp_path, firestore_store
):
    # GIVEN the LLM arm serving everyone from flags seeded into the emulator, read through a 5 s cache
    llm, ticker = ScriptedLLM(), Ticker()
    rt = make_runtime(tmp_path, llm=llm, store=firestore_store, brain_mode="llm")
    rt.flags = FlagsProvider(firestore_store, ttl_seconds=5, monotonic=ticker)
    send(rt, "おはよう", room="before")
    first = firestore_store.query(f"orgs/{ORG}/observability")
    assert [(d["flags_arm"], d["kill_switch"]) for _, d in first] == [("llm", False)]
    # WHEN an operator sets kill_switch in the flags file and the local stack re-seeds it
    path = write_flags(tmp_path / "flags.json", brain_mode="llm", kill_switch=True, version="kill-1")
    seed_flags(firestore_store, path)
    calls_before = len(llm.calls)
    # THEN within the cache period the running process may still answer with the old flags
    assert rt.flags.evaluate(ORG, "u1", datetime.now(UTC))[0].flags_version != "kill-1"
    # AND once the cache period has passed the same process (no redeploy) stops: fixed message,
    # no LLM call, no tool execution
    ticker.advance(5)
    turn_id = send(rt, TASK, room="after")
    record = firestore_store.get(f"orgs/{ORG}/observability/{turn_id}")
    assert (record["flags_reason"], record["flags_version"], record["arm"]) == (
        "KILL_SWITCH",
        "kill-1",
        "kill_switch",
    )
    assert replies(rt)[-1] == rt.persona.message("kill_switch")
    assert len(llm.calls) == calls_before
    assert firestore_store.query(f"orgs/{ORG}/tasks") == []


def test_given_the_live_document_on_the_emulator_when_explained_by_the_cli_then_it_is_used(
    tmp_path, firestore_store, firestore_project, monkeypatch, capsys
):
    # GIVEN the CLI pointed at the emulator project (FIRESTORE_EMULATOR_HOST + CHARTER_PROJECT)
    monkeypatch.setenv("CHARTER_PROJECT", firestore_project)
    monkeypatch.setenv("CHARTER_CHANNELS", "recording")
    monkeypatch.delenv("PUBSUB_EMULATOR_HOST", raising=False)
    path = write_flags(tmp_path / "flags.json", version="live-7", brain_mode="canary", canary_percent=100)
    # WHEN the file is seeded through the CLI and a person explained
    assert main(["flags", "seed", str(path)]) == 0
    assert main(["flags", "explain", "--org", ORG, "--user", "u1", "--json"]) == 0
    # THEN the explanation comes from the live document
    out = capsys.readouterr().out.strip().splitlines()[-1]
    salt = load_flags_file(path).bucket_salt
    assert json.loads(out) == {
        "arm": "llm",
        "reason": "SPLIT",
        "bucket": bucket_fine(salt, ORG, "u1"),
        "flags_version": "live-7",
    }
    # WHEN an operator overrides to legacy through the CLI
    assert (
        main(
            [
                "flags",
                "override",
                "--brain-mode",
                "legacy",
                "--ttl",
                "30m",
                "--author",
                "ops",
                "--reason",
                "drill",
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["flags", "explain", "--org", ORG, "--user", "u1", "--json"]) == 0
    # THEN the override decides, and it is in the audit
    assert json.loads(capsys.readouterr().out)["reason"] == "OVERRIDE"
    assert [d["action"] for _, d in firestore_store.query("config_audit")] == ["override_set"]


def test_given_an_invalid_document_on_the_emulator_when_evaluated_then_legacy_error_and_an_alert(
    firestore_store,
):
    # GIVEN a document Terraform could never write (but a hand edit could)
    firestore_store.set(
        FLAGS_DOC,
        {
            "document_json": '{"version": "v", "brain_mode": "everything"}',
            "version": "x",
            "updated_by": "hand",
        },
    )
    # WHEN a person is evaluated
    section, error = FlagsProvider(firestore_store, ttl_seconds=0).evaluate(ORG, "u1", datetime.now(UTC))
    # THEN legacy with reason ERROR, no candidate, and an alert in the store
    assert (section.arm, section.reason, section.shadow_candidate_arm) == ("legacy", "ERROR", None)
    assert "brain_mode" in error
    assert [d["code"] for _, d in firestore_store.query("alerts")] == ["flags_unusable"]
