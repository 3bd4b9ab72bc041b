"""Fixtures of the command-line tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from infra import cli


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's records, kept in a SQLite store (the demo runs through every layer)."""
    keep = tmp_path_factory.mktemp("demo")
    assert cli.main(["demo", "--keep", str(keep), "--json"]) == 0
    return keep / "demo.sqlite"
