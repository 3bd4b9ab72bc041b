"""``charter … | head -1``: a reader that leaves early ends the command quietly, exit 0.

A real subprocess and a real pipe, its buffer shrunk to one page so that the command is still
writing when the reader goes away (the write then fails with EPIPE, as under ``head``)."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _first_line_then_leave(argv: list[str]) -> tuple[int, bytes, bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "infra.cli", *argv],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    fcntl.fcntl(proc.stdout.fileno(), fcntl.F_SETPIPE_SZ, 4096)
    first = proc.stdout.readline()
    proc.stdout.close()  # the reader goes away, as `head -1` does
    err = proc.stderr.read()
    return proc.wait(timeout=120), first, err


@pytest.mark.parametrize(
    "argv",
    [
        ["metrics", "--since", "7d", "--step", "5"],  # about 2 000 lines
        ["metrics", "--since", "7d", "--step", "5", "--json"],
        ["tools", "list"],  # about 20 kB
    ],
    ids=["metrics", "metrics-json", "tools-list"],
)
def test_a_reader_that_closes_after_one_line_ends_the_command_quietly(argv: list[str], demo_store: Path):
    code, first, err = _first_line_then_leave(
        [*argv, *(["--store", str(demo_store)] if argv[0] == "metrics" else [])]
    )
    assert first.strip()  # the command did write
    assert code == 0  # not 1, not 141 (SIGPIPE)
    assert err == b""  # no traceback, no "Exception ignored"
