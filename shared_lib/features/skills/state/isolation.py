"""How a skill run is started, and whether this machine can wall it off (seed 001 §25).

The operating system is the boundary, not Python. A run is ``unshare --mount --pid --net --ipc
--uts --fork --kill-child`` of ``sandbox_init.py`` (the supervisor, init of the new PID
namespace: killing it kills every process the skill made), which builds a read-only root and
starts ``sandbox_child.py`` as uid/gid 65534 with no supplementary groups; the child sets its
rlimits, ``PR_SET_NO_NEW_PRIVS`` and a seccomp filter on itself before it reads the code. This
needs the parent to be root (here: root of its container) and the namespaces; no user namespace
is made on top (mapping uid 65534 into one needs ``newuidmap``, which this image lacks: the
child's user is a real unprivileged one instead).

``os_isolation()`` probes that once per process (a trivial skill through the whole chain) and
says why not. Where it fails the sandbox refuses every code skill (``sandbox_unavailable``),
unless ``allow_without_os_isolation`` (``config/skills.json``, default false) accepts the
weaker run: the same supervisor and child, no namespaces and no new root.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

from shared_lib.features.skills.state.config import SandboxConfig

HERE = Path(__file__).resolve().parent
SUPERVISOR = HERE / "sandbox_init.py"
CHILD = HERE / "sandbox_child.py"
SECCOMP = HERE / "sandbox_seccomp.py"
SKILL_UID = 65534  # nobody
NAMESPACES = ("--mount", "--pid", "--net", "--ipc", "--uts", "--fork", "--kill-child")
ROOT_LINKS = ("/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32")  # symlinks into /usr here
MIB = 1024 * 1024


def python() -> str:
    """The interpreter's own file (a venv's ``bin/python`` is a symlink to it)."""
    return os.path.realpath(sys.executable)


def binds() -> list[str]:
    """What the child's root shows, read-only: ``/usr`` (and the root's links into it) and the
    interpreter's prefix when it lives elsewhere (here under ``/root``, which stays hidden)."""
    prefix = os.path.realpath(sys.base_prefix)
    paths = ["/usr", *ROOT_LINKS]
    if not prefix.startswith("/usr/"):
        paths.append(prefix)
    return paths


def settings(config: SandboxConfig, timeout: float, workdir: str, *, isolated: bool) -> dict[str, Any]:
    """The supervisor's one argument: where things are and the child's limits."""
    tmpfs = config.tmpfs_mb * MIB
    return {
        "isolated": isolated,
        "python": python(),
        "files": [str(CHILD), str(SECCOMP)],
        "binds": binds(),
        "workdir": workdir,
        "uid": SKILL_UID,
        "tmpfs_bytes": tmpfs,
        "max_line": config.max_output_bytes + 1024,
        "limits": [
            str(config.memory_mb * MIB),
            str(int(timeout) + 1),
            str(config.max_open_files),
            str(tmpfs),
            str(config.max_processes),
        ],
    }


def prefix(*, isolated: bool) -> list[str]:
    """``unshare`` and its namespaces for an isolated run; nothing otherwise."""
    if not isolated:
        return []
    tool = shutil.which("unshare")
    return [tool, *NAMESPACES] if tool else ["unshare-not-installed"]


def unavailable_reason() -> str | None:
    """Why an isolated run cannot even be tried here (the probe runs one to be sure)."""
    if os.geteuid() != 0:
        return "the sandbox needs root to make its namespaces and drop to an unprivileged user"
    if shutil.which("unshare") is None:
        return "unshare (util-linux) is not installed"
    return None
