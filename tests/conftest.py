"""Shared fixtures.

* An autouse fixture restores ``os.environ`` and forbids real network calls (only
  loopback is allowed): no test ever calls a real LLM or a real provider.
* ``emulators`` starts the real Pub/Sub and Firestore emulators once per session (only
  when a test asks for it) and stops them by process id.
* ``firestore_store`` gives each test its own Firestore project on the emulator, so tests
  never see each other's documents.
* ``demo_run_once`` is the embedded demo, run once per session for the tests that only read it;
  ``demo_store`` is a copy of its records in a SQLite file, per module (the command-line tests of
  ``unit/cli`` read it in process, ``functional`` through a real pipe).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import socket
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from infra.emulators import Emulators, stop_on_sigterm
from shared_lib.observability import logs
from shared_lib.settings import Settings, config_files
from shared_lib.wiring.composition import apply_process_settings

ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"

# The order of the collected files: the tests that wait on a stack or an emulator first. It is the
# run's order in one process (``TEST_WORKERS=0``); pytest-xdist (``make test``) then hands the files
# out by their number of tests, most first, keeping this order among files of the same count (see
# the Makefile on why its default stays).
SUITE_ORDER = ("e2e", "integration", "functional", "static", "unit")


def suite_rank(path: Path) -> int:
    """Where a test file's folder comes in ``SUITE_ORDER`` (one outside it: last)."""
    here = Path(__file__).resolve().parent
    resolved = path.resolve()
    parts = resolved.relative_to(here).parts if resolved.is_relative_to(here) else ()  # a module's doctest
    return SUITE_ORDER.index(parts[0]) if parts and parts[0] in SUITE_ORDER else len(SUITE_ORDER)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: suite_rank(Path(str(item.path))))  # stable: within a folder as collected


# Property tests explore at random on developers' machines and reproducibly in CI, where a
# red run must mean a regression, not a new random find.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")
_real_connect = socket.socket.connect
_real_create_connection = socket.create_connection


def _loopback(address: object) -> bool:
    if isinstance(address, tuple) and address:
        host = str(address[0])
        return host in ("localhost", "::1") or host.startswith("127.")
    return isinstance(address, str | bytes)  # unix sockets


UNIT = Path(__file__).resolve().parent / "unit"
# functional tests run in process or in their own processes, never against the session's emulators
FUNCTIONAL = Path(__file__).resolve().parent / "functional"


@pytest.fixture(autouse=True)
def _no_network_and_clean_env(
    monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Iterator[None]:
    saved = dict(os.environ)
    if {UNIT, FUNCTIONAL} & set(Path(str(request.node.path)).parents):
        # unit and functional tests use no emulator: the ones a session fixture of another folder
        # exported (the whole suite runs e2e first) must not reach them (nor a process they start)
        for var in ("FIRESTORE_EMULATOR_HOST", "PUBSUB_EMULATOR_HOST", "CHARTER_STORE", "CHARTER_BUS"):
            monkeypatch.delenv(var, raising=False)

    def guarded_connect(self: socket.socket, address: object) -> object:
        if not _loopback(address):
            raise RuntimeError(f"test tried to reach the network: {address!r}")
        return _real_connect(self, address)  # type: ignore[arg-type]

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    yield
    os.environ.clear()
    os.environ.update(saved)
    # what a test's runtime applied process-wide (configuration files, log format) ends with it
    config_files.configure(config_files.ConfigFiles())
    logs.configure(json_logs=False, project="charter-local")


def configure_from_env() -> None:
    """Apply the process environment's settings as a service's start-up does."""
    apply_process_settings(Settings.from_env())


@pytest.fixture(scope="session")
def emulators() -> Iterator[Emulators]:
    ARTIFACTS.mkdir(exist_ok=True)
    emu = Emulators.start(log_dir=ARTIFACTS)
    stop_on_sigterm(emu.stop)
    try:
        yield emu
    finally:
        emu.stop()


@pytest.fixture
def emulator_env(emulators: Emulators, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for key, value in emulators.env.items():
        monkeypatch.setenv(key, value)
    return emulators.env


@pytest.fixture
def firestore_project(emulator_env: dict[str, str]) -> str:
    return f"t-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def firestore_store(firestore_project: str):  # type: ignore[no-untyped-def]
    from shared_lib.adapters.firestore_store import FirestoreStore

    return FirestoreStore(project=firestore_project)


@pytest.fixture
def memory_store():  # type: ignore[no-untyped-def]
    from shared_lib.adapters.memory_store import MemoryStore

    return MemoryStore()


@dataclass(frozen=True)
class DemoRun:
    """One run of ``charter demo --keep DIR --json`` (exit 0: every turn answered, no reply leaks):
    what it printed and the folder that keeps its SQLite store."""

    printed: dict[str, Any]
    keep: Path


@pytest.fixture(scope="session")
def demo_run_once(tmp_path_factory: pytest.TempPathFactory) -> DemoRun:
    """The embedded demo through every layer with the scripted model, run once for the session:
    the tests that use it only read it (a module whose commands write gets a copy: ``demo_store``)."""
    from infra import cli

    keep = tmp_path_factory.mktemp("demo-once") / "demo"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert cli.main(["demo", "--keep", str(keep), "--json"]) == 0
    return DemoRun(printed=json.loads(printed.getvalue()), keep=keep)


@pytest.fixture(scope="module")
def demo_store(demo_run_once: DemoRun, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's records, kept in a SQLite store (the demo runs through every layer): a copy of
    the session's demo store for each module, so what a module's commands write stays in it."""
    keep = tmp_path_factory.mktemp("demo")
    for part in demo_run_once.keep.glob("demo.sqlite*"):
        shutil.copy2(part, keep / part.name)
    return keep / "demo.sqlite"
