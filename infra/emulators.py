"""Start and stop the real Pub/Sub and Firestore emulators (gcloud SDK), by process id.

Each emulator runs in its own session (process group) so that stopping it by its pid
also stops the Java process gcloud spawns.

>>> emu = Emulators.start()          # doctest: +SKIP
>>> emu.env["PUBSUB_EMULATOR_HOST"]  # doctest: +SKIP
'127.0.0.1:40123'
>>> emu.stop()                       # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

_handed: set[int] = set()


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def free_port() -> int:
    """A free port below the kernel's ephemeral range.

    A port taken from the ephemeral range can be handed to some process's outgoing
    connection between our check and the server's bind ("Address already in use"); ports
    below that range are only ever taken by servers that ask for them.
    """
    low, _ = _ephemeral_range()
    rng = random.Random()
    for _ in range(500):
        port = rng.randrange(max(1024, low - 12000), low - 1)
        if port in _handed:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed.add(port)
        return port
    raise RuntimeError("no free port below the ephemeral range")


def wait_port(port: int, timeout: float = 90.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            socket.create_connection(("127.0.0.1", port), 0.5).close()
            return True
        except OSError:
            time.sleep(0.2)
    return False


def stop_pid(pid: int, grace: float = 5.0) -> None:
    """SIGTERM the process group led by ``pid``, then SIGKILL what is left."""
    stop_pids([pid], grace)


def stop_pids(pids: Iterable[int], grace: float = 5.0) -> None:
    """SIGTERM the process groups led by ``pids`` all at once, give them ``grace`` seconds together,
    then SIGKILL what is left: a stack's processes shut down side by side, not one after another."""
    left = list(dict.fromkeys(pids))
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 2.0)):
        for pid in list(left):
            try:
                os.killpg(pid, sig)
            except ProcessLookupError:
                left.remove(pid)
            except PermissionError:
                os.kill(pid, sig)
        end = time.monotonic() + wait
        while left and time.monotonic() < end:
            left = [pid for pid in left if _group_alive(pid)]
            if left:
                time.sleep(0.1)
        if not left:
            return


def _group_alive(pid: int) -> bool:
    _reap(pid)
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return False
    return True


def pid_alive(pid: int) -> bool:
    _reap(pid)
    try:
        os.killpg(pid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def process_alive(pid: int) -> bool:
    """Whether the one process ``pid`` runs (not a zombie); ``pid_alive`` asks about its group."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def _reap(pid: int) -> None:
    """Collect ``pid`` if it is an exited child of this process (a zombie still answers signals)."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def child_pids(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (from ``/proc``): a gunicorn arbiter's workers."""
    children = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # gone meanwhile
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last ")"
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 1 and int(fields[1]) == pid:
            children.append(int(entry.name))
    return sorted(children)


def kill_group(pid: int) -> None:
    """SIGKILL the process group led by ``pid`` at once (a crash, not a shutdown) and wait for it."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    end = time.monotonic() + 10.0
    while time.monotonic() < end and pid_alive(pid):
        time.sleep(0.05)


def stop_on_sigterm(stop: Callable[[], object]) -> None:
    """Run ``stop`` if this process is terminated (a killed test run must not leave processes)."""
    previous = signal.getsignal(signal.SIGTERM)

    def handler(signum: int, frame: FrameType | None) -> None:
        stop()
        if callable(previous):
            previous(signum, frame)
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, handler)


@dataclass
class Emulators:
    pubsub_port: int
    firestore_port: int
    pids: dict[str, int] = field(default_factory=dict)
    log_dir: Path | None = None

    @property
    def env(self) -> dict[str, str]:
        return {
            "PUBSUB_EMULATOR_HOST": f"127.0.0.1:{self.pubsub_port}",
            "FIRESTORE_EMULATOR_HOST": f"127.0.0.1:{self.firestore_port}",
        }

    @classmethod
    def start(cls, *, log_dir: Path | None = None, project: str = "charter-local") -> Emulators:
        if shutil.which("gcloud") is None:
            raise RuntimeError("gcloud is not installed: the Pub/Sub and Firestore emulators are required")
        emu = cls(free_port(), free_port(), log_dir=log_dir)
        cmds = {
            "pubsub": [
                "gcloud",
                "beta",
                "emulators",
                "pubsub",
                "start",
                f"--host-port=127.0.0.1:{emu.pubsub_port}",
                f"--project={project}",
                "--quiet",
            ],
            "firestore": [
                "gcloud",
                "emulators",
                "firestore",
                "start",
                f"--host-port=127.0.0.1:{emu.firestore_port}",
                "--quiet",
            ],
        }
        try:
            for name, cmd in cmds.items():
                out = open(log_dir / f"{name}-emulator.log", "ab") if log_dir else subprocess.DEVNULL  # noqa: SIM115
                proc = subprocess.Popen(
                    cmd,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
                emu.pids[name] = proc.pid
            for name, port in (("pubsub", emu.pubsub_port), ("firestore", emu.firestore_port)):
                if not wait_port(port):
                    raise RuntimeError(f"the {name} emulator did not open port {port}")
        except BaseException:
            emu.stop()
            raise
        return emu

    def stop(self) -> None:
        stop_pids(self.pids.values())
        self.pids.clear()

    def reset_firestore(self, project: str) -> None:
        """Delete every document of ``project`` in the Firestore emulator."""
        import urllib.request

        url = (
            f"http://127.0.0.1:{self.firestore_port}/emulator/v1/projects/{project}"
            "/databases/(default)/documents"
        )
        urllib.request.urlopen(urllib.request.Request(url, method="DELETE"), timeout=10).read()
