"""``charter guard explain`` and ``charter guard status``: the window per organisation, the
brain-caused and the excluded counts, the thresholds, the decision now, the last trip; exit 2
without a store. The live store is handed in through the parsed arguments (``args.store``)."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime

import pytest
from rollout_fakes import guard_record

from infra.cli import main as charter
from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.cli import build_parser
from shared_lib.flags import RollbackGuardConfig
from shared_lib.rollout.guard import RollbackGuard
from shared_lib.wiring.composition import build_runtime


def run(argv: list[str], store: MemoryStore) -> int:
    args = build_parser().parse_args(argv)
    args.store = store
    return int(args.func(args))


@pytest.fixture
def store() -> MemoryStore:
    """A live store where acme regressed and was rolled back, beta is healthy and gamma's users
    asked for forbidden things 20 times."""
    store = MemoryStore()
    now = datetime.now(UTC)  # the command reads the window at the real time
    rt = build_runtime({"CHARTER_ENV": "test", "CHARTER_LLM": "none"}, store=store, clock=lambda: now)
    guard = RollbackGuard(RollbackGuardConfig(), evaluate_every_seconds=0)
    records = (
        [guard_record(org="beta") for _ in range(20)]
        + [guard_record(org="gamma", block="danger.blocked_operation") for _ in range(20)]
        + [guard_record(org="acme", errors=("llm_unavailable",) if i < 3 else ()) for i in range(20)]
    )
    for record in records:
        guard.observe(rt, record)
    return store


def test_given_a_trip_when_explained_as_json_then_counts_thresholds_decision_and_last_trip_are_printed(
    store, capsys
):
    assert run(["guard", "explain", "--json"], store) == 0
    view = json.loads(capsys.readouterr().out)
    # THEN per organisation: brain-caused counts and the excluded user-caused ones
    assert view["orgs"]["gamma"]["excluded"]["user_blocks"] == 20
    assert view["orgs"]["gamma"]["brain_caused"]["blocks"] == 0 and view["orgs"]["gamma"]["tripped"] == []
    assert view["orgs"]["beta"]["brain_caused"]["turns"] == 20
    # AND acme's window restarted at its trip: nothing counted since
    assert "acme" not in view["orgs"] and view["tripped_earlier"] == ["acme"]
    # AND the thresholds, the decision now, and the last trip with its reasons
    assert view["thresholds"]["llm_error_rate_max"] == 0.05 and view["window_minutes"] == 15
    assert view["decision_now"]["action"] == "none"
    trip = view["last_trip"]
    assert (trip["decision"], trip["orgs"]) == ("org", ["acme"])
    assert trip["reasons"] == ["acme: llm_error_rate 0.150 (3/20) > 0.05"]


def test_given_an_organisation_when_explained_as_text_then_only_it_is_shown_with_its_checks(store, capsys):
    assert run(["guard", "explain", "--org", "gamma"], store) == 0
    out = capsys.readouterr().out
    assert "gamma (since" in out and "beta (since" not in out
    assert "excluded (user- or system-caused): user_blocks 20" in out
    assert "block_rate" in out and "0.000 (0/20)" in out
    assert "decision now: none" in out and "last trip: rollback guard trip" in out and "acme" in out


def test_given_an_organisation_with_nothing_counted_when_explained_then_it_says_so(store, capsys):
    assert run(["guard", "explain", "--org", "nobody"], store) == 0
    assert "nobody: nothing counted in the window" in capsys.readouterr().out


def test_given_the_window_when_the_status_is_printed_then_each_organisations_checks_are_listed(store, capsys):
    assert run(["guard", "status"], store) == 0
    out = capsys.readouterr().out
    assert "gamma" in out and "beta" in out and "llm_error_rate" in out and "daily_cost_usd" in out


@pytest.fixture
def bare(monkeypatch, tmp_path):
    """A folder with nothing configured: no store, no emulator, no project exported."""
    for var in list(os.environ):
        if var.startswith(("CHARTER_", "FIRESTORE_", "PUBSUB_", "GOOGLE_")):
            monkeypatch.delenv(var)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_given_no_store_configured_when_explained_then_exit_2_with_one_line(bare, capsys):
    assert charter(["guard", "explain"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no store configured" in err[0]
