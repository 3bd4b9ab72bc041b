"""``charter local up`` when a component cannot start: progress lines on stderr as it goes, then
one line naming the component and its log, exit 1, no traceback; what started is stopped.

Unit level: the stack's start is replaced by one component, a process that binds a port the
test already holds (the port is taken) and so exits, as a real emulator or function would."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path
from typing import Any

import pytest

from infra import cli, local_stack

# binds the given port, as a server does; with the port taken it dies with "Address already in use"
BIND = "import socket, sys, time; s = socket.socket(); s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen(); time.sleep(60)"


@pytest.fixture
def stack_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "local"
    monkeypatch.setattr(local_stack, "STATE_DIR", root)
    return root


def test_a_component_whose_port_is_taken_is_one_line_with_its_log(
    stack_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    # GIVEN a port some other process holds, and a stack whose one component needs it
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    port = holder.getsockname()[1]

    def start_one(paths: Any, state: dict[str, Any], timeout: float, say: Any) -> None:
        say("starting the emulators and fakes")
        local_stack._spawn(
            paths, state, "fake_llm", [sys.executable, "-c", BIND, str(port)], dict(os.environ), port, ""
        )
        local_stack._wait(state, "fake_llm", timeout=30)

    monkeypatch.setattr(local_stack, "_start_all", start_one)
    try:
        # WHEN the stack is started
        code = cli.main(["local", "up"])
    finally:
        holder.close()
    captured = capsys.readouterr()
    # THEN exit 1, progress first, then one error line naming the component and its log
    assert code == 1 and captured.out == ""
    lines = captured.err.splitlines()
    assert lines[0].endswith("s] starting the emulators and fakes") and lines[0].startswith("[")
    log = stack_dir / "logs" / "fake_llm.log"
    assert (
        lines[-1]
        == f"charter: error: local up: fake_llm exited while starting (port {port} taken?): see {log}"
    )
    assert "Traceback" not in captured.err
    assert "Address already in use" in log.read_text(encoding="utf-8")  # the log says why
    # and nothing is left recorded (what started was stopped)
    assert not local_stack.load_state(stack_dir).get("components")


def test_an_emulator_that_is_not_installed_is_one_line(
    stack_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    def start_missing(paths: Any, state: dict[str, Any], timeout: float, say: Any) -> None:
        local_stack._spawn(
            paths, state, "pubsub", ["charter-no-such-gcloud", "beta"], dict(os.environ), 1, ""
        )

    monkeypatch.setattr(local_stack, "_start_all", start_missing)
    assert cli.main(["local", "up"]) == 1
    err = capsys.readouterr().err
    assert err == "charter: error: local up: pubsub: charter-no-such-gcloud is not installed (not on PATH)\n"


def test_a_stack_already_recorded_is_bad_configuration(stack_dir: Path, capsys: pytest.CaptureFixture[str]):
    stack_dir.mkdir(parents=True)
    (stack_dir / "state.json").write_text('{"components": {"ingress": {"pid": 1}}}', encoding="utf-8")
    assert cli.main(["local", "up"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("charter: error: local up: a stack is already recorded") and err.count("\n") == 1
