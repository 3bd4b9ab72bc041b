"""The sandbox's trusted supervisor: the first process of a skill run, started by ``sandbox.py`` as
``python -I -S sandbox_init.py SETTINGS_JSON`` (inside ``unshare --mount --pid --net --ipc --uts
--fork --kill-child`` in the isolated mode, so it is the init of a fresh PID namespace).

Standard library only, like the child. It never runs the skill's code itself. In order:

1. reads the parent's one request line (``nonce``, ``code``, ``input``, ``allow``) from stdin;
2. (isolated mode) builds the root the skill sees and moves into it: a small tmpfs holding
   read-only bind mounts of what Python needs (``/usr``, the interpreter's prefix, a few device
   nodes, ``sandbox_child.py``), a ``proc`` of this PID namespace only (``hidepid=2``: the skill
   sees no process of another user, so not this one), a private tmpfs at ``/tmp`` owned by the
   skill's user (the only writable place), ``pivot_root`` into it, the old root detached and the
   new root remounted read-only. The host's files (``/etc``, ``/root``, the worktree, the
   stack's environment file) are simply not there;
3. starts the child (``sandbox_child.py``) as an unprivileged user (uid/gid 65534, no
   supplementary groups) with pipes of its own for stdin and stdout. The child sets its rlimits,
   ``PR_SET_NO_NEW_PRIVS`` and its seccomp filter on itself before it reads the request this
   process then sends it — without the nonce, which never reaches the child's memory;
4. relays the child's view requests to the parent and the answers back, and holds the child's
   final line. It reports ``{"op": "final", "nonce", "message"}`` only once the child has then
   ended with status 0 with nothing written after that line; a child that keeps running after a
   result it wrote is still running at the parent's deadline, and the run is a ``timeout``.

Why a supervisor and a nonce (rather than trusting the child's stdout): the skill's code and the
child's own code share one process, so whatever the child may write, the skill may write too (a
forged ``result`` line). Here the skill can reach only its own pipes to this process: the parent
accepts one line from this process's stdout, and only with the nonce the parent generated for
the run, which the child (a fresh interpreter, another uid, no access to ``/proc/1``) never holds.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
from typing import Any

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
SYS_PIVOT_ROOT = 155  # x86_64
PR_SET_DUMPABLE = 4
VIEW_OPS = ("get", "query", "set", "delete")
SANDBOX_DIR = "/sandbox"  # the child's own files, read-only
DEVICES = ("/dev/null", "/dev/zero", "/dev/urandom", "/dev/random")

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = [None if x is None else x.encode() for x in (source, target, fstype, data)]
    _check(_libc.mount(enc[0], enc[1], enc[2], ctypes.c_ulong(flags), enc[3]), f"mount {target}")


def _bind_read_only(path: str, new_root: str) -> None:
    target = new_root + path
    if os.path.isdir(path):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        open(target, "ab").close()
    _mount(path, target, None, MS_BIND | MS_REC)
    # a bind mount takes its flags from the remount that follows
    _mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID)


def build_root(settings: dict[str, Any]) -> None:
    """Make the root this process (and so the child) sees: see the module docstring."""
    new_root = settings["workdir"]
    _mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing here propagates to the host
    _mount("charter-skill", new_root, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755")
    for path in settings["binds"]:
        if os.path.islink(path) and os.path.dirname(path) == "/":
            os.symlink(os.readlink(path), new_root + path)  # /bin -> usr/bin and the like
        elif os.path.exists(path):
            _bind_read_only(path, new_root)
    for device in DEVICES:
        _bind_read_only(device, new_root)
    for path in settings["files"]:  # sandbox_child.py and what it imports from beside itself
        target = new_root + SANDBOX_DIR + "/" + os.path.basename(path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        open(target, "ab").close()
        _mount(path, target, None, MS_BIND)
        _mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID)
    os.makedirs(new_root + "/proc")
    _mount("proc", new_root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, "hidepid=2")
    uid = settings["uid"]
    os.makedirs(new_root + "/tmp")
    _mount(
        "charter-skill-tmp",
        new_root + "/tmp",
        "tmpfs",
        MS_NOSUID | MS_NODEV | MS_NOEXEC,
        f"size={settings['tmpfs_bytes']},nr_inodes=256,mode=0700,uid={uid},gid={uid}",
    )
    os.makedirs(new_root + "/.old")
    os.chdir(new_root)
    _check(_libc.syscall(SYS_PIVOT_ROOT, b".", b".old"), "pivot_root")
    _check(_libc.umount2(b"/.old", MNT_DETACH), "umount old root")
    os.rmdir("/.old")
    os.chdir("/")
    _mount(None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


def _start_child(settings: dict[str, Any]) -> subprocess.Popen[bytes]:
    isolated = settings["isolated"]
    drop: dict[str, Any] = {}
    if os.geteuid() == 0:
        drop = {"user": settings["uid"], "group": settings["uid"], "extra_groups": []}
    if drop and not isolated:
        os.chown(settings["workdir"], settings["uid"], settings["uid"])  # its only writable place
    child = settings["files"][0]
    script = f"{SANDBOX_DIR}/{os.path.basename(child)}" if isolated else child
    return subprocess.Popen(
        [settings["python"], "-I", "-S", script, *settings["limits"], os.path.basename(settings["workdir"])],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={"TMPDIR": "/tmp" if isolated else settings["workdir"]},
        cwd="/tmp" if isolated else settings["workdir"],
        close_fds=True,
        **drop,
    )


def _emit(nonce: str, message: dict[str, Any]) -> None:
    out = sys.__stdout__
    assert out is not None
    out.write(json.dumps({"op": "final", "nonce": nonce, "message": message}, ensure_ascii=False) + "\n")
    out.flush()


def _error(kind: str, message: str) -> dict[str, Any]:
    return {"op": "error", "kind": kind, "message": message}


def relay(child: subprocess.Popen[bytes], max_line: int) -> dict[str, Any]:
    """Serve the child until its final line, then wait for it to end: the message to report."""
    assert child.stdout is not None and child.stdin is not None
    parent_in = sys.stdin.buffer
    parent_out = sys.stdout.buffer
    final: dict[str, Any] | None = None
    while final is None:
        line = child.stdout.readline(max_line + 1)
        if not line:
            break
        if len(line) > max_line or not line.endswith(b"\n"):
            final = _error("bad_output", f"a line over {max_line} bytes")
            break
        try:
            message = json.loads(line)
        except ValueError:
            final = _error("bad_output", "the skill broke the protocol")
            break
        op = message.get("op") if isinstance(message, dict) else None
        if op in ("result", "error"):
            final = message
        elif op in VIEW_OPS:
            parent_out.write(json.dumps(message, ensure_ascii=False).encode() + b"\n")
            parent_out.flush()
            child.stdin.write(parent_in.readline())
            child.stdin.flush()
        else:
            final = _error("bad_output", "the skill broke the protocol")
    child.stdin.close()
    if final is not None and final.get("op") == "error" and final.get("kind") == "bad_output":
        child.kill()  # it broke the protocol: its verdict is given, whatever it does next
        child.wait()
        return final
    after = child.stdout.read(1)  # a child still running after its result blocks here: the deadline
    code = child.wait()
    if final is not None and after:
        return _error("bad_output", "the skill wrote after its result")
    if code != 0:
        if code in (-signal.SIGXCPU, -signal.SIGKILL):
            return _error("timeout", "the skill used up its CPU time")
        return _error("exception", f"the skill's process ended ({code})")
    return final or _error("exception", "the skill's process ended without a result")


def main() -> None:
    _libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # no /proc/<pid>/mem of this process for anyone
    settings = json.loads(sys.argv[1])
    request = json.loads(sys.stdin.buffer.readline())
    nonce = request.pop("nonce")
    try:
        if settings["isolated"]:
            build_root(settings)
        child = _start_child(settings)
    except OSError as exc:
        _emit(nonce, _error("sandbox_unavailable", f"the sandbox could not be set up: {exc}"))
        return
    assert child.stdin is not None
    try:
        child.stdin.write(json.dumps(request, ensure_ascii=False).encode() + b"\n")
        child.stdin.flush()
    except BrokenPipeError:
        pass  # it ended before reading: its exit status says why
    _emit(nonce, relay(child, settings["max_line"]))


if __name__ == "__main__":
    main()
