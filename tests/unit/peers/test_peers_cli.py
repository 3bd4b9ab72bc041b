"""``charter peers list``: every configured peer with its last health; ``--probe`` probes the
peers now over HTTP (here: the fake Anthropic server) and records what it found."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infra import cli
from infra.fake_llm.scenario import Scenario
from infra.fake_llm.server import FakeAnthropicServer
from shared_lib.adapters.sqlite_store import SQLiteStore

OVERLOADED = Scenario.from_dict({"rules": [{"fault": {"kind": "status", "status": 529}}]})


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch):
    with FakeAnthropicServer() as fake:
        monkeypatch.setenv("CHARTER_ENV", "test")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        yield fake


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = cli.main(argv)
    return code, capsys.readouterr().out


def test_probe_records_an_overloaded_peer_as_a_finding_then_its_recovery(
    server: FakeAnthropicServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    store = str(tmp_path / "s.sqlite")
    SQLiteStore(Path(store))
    # GIVEN the primary answers 529 to everything
    server.set_scenario(OVERLOADED)
    code, out = run(["peers", "list", "--probe", "--json", "--store", store], capsys)
    (row,) = json.loads(out)["peers"]
    # THEN the probe is a finding, recorded with a content-free reason
    assert code == 1
    assert (row["name"], row["kind"], row["local"]) == ("anthropic", "anthropic", False)
    assert row["health"]["healthy"] is False and "529" in row["health"]["reason"]
    # WHEN it recovers, a new probe says so, and a plain list reads it back from the store
    server.set_scenario(Scenario.from_dict({"rules": []}))
    assert run(["peers", "list", "--probe", "--store", store], capsys)[0] == 0
    code, out = run(["peers", "list", "--store", store], capsys)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("peer") and lines[1].split()[:4] == [
        "anthropic",
        "anthropic",
        "cloud",
        "healthy",
    ]
    assert "proposal,phrasing,critique,evaluation,classification,summary" in lines[1]


def test_a_peers_configuration_that_does_not_load_is_2(
    server: FakeAnthropicServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
):
    store = str(tmp_path / "s.sqlite")
    SQLiteStore(Path(store))
    monkeypatch.setenv("CHARTER_PEERS", '{"peers": [{"name": "v", "kind": "vertex"}]}')
    assert cli.main(["peers", "list", "--store", store]) == 2
    assert "needs its region" in capsys.readouterr().err
