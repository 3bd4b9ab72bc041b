"""The process helpers of the local stack (``infra.emulators``): a function's workers are the
children of the recorded arbiter, a crash is a SIGKILL of its whole process group, a stack's
processes are stopped side by side, and a stack leaves the emulators it shares alone."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from infra import local_stack
from infra.emulators import Emulators, child_pids, kill_group, pid_alive, process_alive, stop_pids

# A parent that starts a child and waits: the shape of gunicorn's arbiter and its worker.
PARENT = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"


def test_the_workers_of_a_process_are_its_children_and_a_group_kill_ends_them_all():
    # GIVEN a process group like a function's: a parent (the arbiter) and its child (the worker)
    parent = subprocess.Popen([sys.executable, "-c", PARENT], start_new_session=True)
    try:
        children: list[int] = []
        for _ in range(200):
            children = child_pids(parent.pid)
            if children:
                break
            time.sleep(0.05)  # the parent is still starting its child
        # THEN the child is found by its parent pid
        assert len(children) == 1 and process_alive(children[0]) and pid_alive(parent.pid)
        # WHEN the group is killed as in a crash
        kill_group(parent.pid)
        # THEN parent and child are gone
        assert not pid_alive(parent.pid)
        assert not process_alive(parent.pid) and not process_alive(children[0])
    finally:
        kill_group(parent.pid)


def test_a_process_without_children_has_no_workers():
    lone = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        assert child_pids(lone.pid) == []
    finally:
        kill_group(lone.pid)
    assert not process_alive(lone.pid)


# A process that ignores SIGTERM: only the SIGKILL after the grace ends it.
STUBBORN = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"


def test_process_groups_stopped_together_are_all_gone_even_one_that_ignores_sigterm():
    # GIVEN three process groups, one of them (a parent with its child) and one that ignores SIGTERM
    groups = [
        subprocess.Popen([sys.executable, "-c", PARENT], start_new_session=True),
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True),
        subprocess.Popen([sys.executable, "-c", STUBBORN], start_new_session=True),
    ]
    try:
        # WHEN they are stopped together, with a short grace
        stop_pids([p.pid for p in groups], grace=0.5)
        # THEN no process of any group is left
        assert not any(pid_alive(p.pid) or process_alive(p.pid) for p in groups)
    finally:
        for p in groups:
            kill_group(p.pid)


def test_down_stops_the_stacks_own_processes_and_leaves_the_shared_emulators(tmp_path):
    # GIVEN a recorded stack whose emulators a test session shares with it, and a function of its own
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    shared = {n: subprocess.Popen(sleeper, start_new_session=True) for n in ("pubsub", "firestore")}
    brain = subprocess.Popen(sleeper, start_new_session=True)
    emulators = Emulators(pubsub_port=1, firestore_port=2, pids={n: p.pid for n, p in shared.items()})
    state = {
        "project": "charter-shared",
        "components": {
            **{n: local_stack._shared(emulators, n, port) for n, port in (("pubsub", 1), ("firestore", 2))},
            "brain": {"pid": brain.pid, "port": 3, "url": "http://127.0.0.1:3", "cmd": sleeper},
        },
    }
    local_stack._save(local_stack._paths(tmp_path), state)
    try:
        # WHEN the shared Pub/Sub emulator is restarted through this stack THEN it is refused
        with pytest.raises(ValueError, match="shared"):
            local_stack.restart("pubsub", root=tmp_path)
        # WHEN the stack goes down
        stopped = local_stack.down(root=tmp_path)
        # THEN its own process is gone, the emulators still run, and only its own is reported stopped
        assert stopped == ["brain"] and not pid_alive(brain.pid)
        assert all(pid_alive(p.pid) for p in shared.values())
    finally:
        for p in [*shared.values(), brain]:
            kill_group(p.pid)
