"""The sandbox's escape table (seed 001 §25, issue 33): each row a hostile skill and what must
come of it. The first rows go through the Python first line as a skill would; the rest run with
it left out (``python_checks=False``: full builtins, any import, no audit hook — as if every
Python-level check were bypassed) to show the operating system still holds: an unprivileged
user in its own namespaces, a read-only root with a private tmpfs, seccomp and rlimits.

After every row: nothing with the run's marker appeared in the host's ``/tmp``, in the
sentinel directory or in the worktree, and no process whose command line carries the marker is
left. Timeouts use a short deadline; the rest end at once."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.features.skills.state import sandbox
from shared_lib.features.skills.state.sandbox import run_code
from tests.unit.skills.skill_fakes import CONFIG, ORG, config

REPO = Path(__file__).resolve().parents[2]
SHORT = 1.5  # seconds: the rows that must end as a timeout
pytestmark = pytest.mark.skipif(
    sandbox.os_isolation() is not None, reason=f"no OS sandbox here: {sandbox.os_isolation()}"
)

# the escape, as written: the view's globals through operator.attrgetter, the audit
# hook's switch turned off, then the host's files and a shell
ATTRGETTER = """import operator
def run(input, view):
    g = operator.attrgetter('get.__globals__')(view)
    if '_armed' in g:
        g['_armed'][0] = False
    os = g['sys'].modules['os']
    os.system('touch /tmp/{M}-shell')
    os.mkfifo('/tmp/{M}-fifo')
    return g['builtins'].open('/etc/passwd').read()
"""


def body(text: str) -> str:
    lines = text.strip("\n").splitlines()
    return "def run(input, view):\n" + "".join(f"    {line}\n" for line in lines)


# (row, python checks, code, config, expected error kind, a fragment of the error)
FIRST_LINE = [
    ("attrgetter-globals", True, ATTRGETTER, CONFIG, "import", "operator"),
    ("attrgetter-allowed-on-purpose", True, ATTRGETTER, config("operator"), "process", "os.system"),
    ("functools-import", True, "import functools\n" + body("return 1"), CONFIG, "import", "functools"),
    ("inspect-import", True, "import inspect\n" + body("return 1"), CONFIG, "import", "inspect"),
    ("gc-import", True, body("return __import__('g' + 'c').get_objects()"), CONFIG, "import", "gc"),
    (
        "datetime-sys",
        True,
        "import datetime\n" + body("return datetime.sys.modules['os'].getcwd()"),
        CONFIG,
        "exception",
        "sys",
    ),
    (
        "formatter-get-field",
        True,
        "import string\n" + body("return string.Formatter().get_field('0.get.__globals__', [view], {})"),
        CONFIG,
        "exception",
        "Formatter",
    ),
]
OS_BOUNDARY = [
    ("open-sentinel", "open('{S}/{M}', 'w').write('x')", "exception", "No such file"),
    ("open-root", "open('/{M}', 'w').write('x')", "exception", "Read-only file system"),
    ("os-open-usr", "import os\nos.open('/usr/{M}', os.O_CREAT | os.O_WRONLY)", "exception", "Read-only"),
    ("worktree", "open('{R}/{M}', 'w').write('x')", "exception", "No such file"),
    ("write-etc", "open('/etc/{M}', 'w').write('x')", "exception", "No such file"),
    ("mkfifo-tmp", "import os\nos.mkfifo('/tmp/{M}')", "exception", "Operation not permitted"),
    ("mknod-tmp", "import os\nos.mknod('/tmp/{M}')", "exception", "Operation not permitted"),
    ("symlink", "import os\nos.symlink('/tmp', '/usr/{M}')", "exception", "Read-only"),
    ("link", "import os\nos.link('/sandbox/sandbox_child.py', '/sandbox/{M}')", "exception", "Read-only"),
    ("rename", "import os\nos.rename('/sandbox/sandbox_child.py', '/usr/{M}')", "exception", "Errno"),
    (
        "shutil-copy",
        "import shutil\nshutil.copy('/sandbox/sandbox_child.py', '/usr/{M}')",
        "exception",
        "Read-only",
    ),
    (
        "tempfile-outside",
        "import tempfile\ntempfile.mkstemp(dir='/var/tmp', prefix='{M}')",
        "exception",
        "No such file",
    ),
    ("shadow", "return open('/etc/shadow').read()", "exception", "No such file"),
    ("host-environ", "return open('/proc/1/environ').read()", "exception", "No such file"),
    ("supervisor-mem", "return open('/proc/1/mem', 'rb').read(1)", "exception", "No such file"),
    ("fork-storm", "import os\nwhile True:\n    os.fork()", "exception", "Operation not permitted"),
    (
        "os-system",
        "import os\nassert os.system('touch /tmp/{M}') != 0, 'ran'\nraise OSError('refused')",
        "exception",
        "refused",
    ),
    (
        "execve",
        "import os\nos.execv('/usr/bin/touch', ['touch', '/tmp/{M}'])",
        "exception",
        "Operation not permitted",
    ),
    (
        "subprocess",
        "import subprocess\nsubprocess.run(['/usr/bin/touch', '/tmp/{M}'])",
        "exception",
        "Operation not permitted",
    ),
    (
        "threads-bounded",
        "import threading, time\nfor _ in range(200):\n    threading.Thread(target=time.sleep, args=(30,), daemon=True).start()",
        "exception",
        "thread",
    ),
    (
        "socket-loopback",
        "import socket\nsocket.create_connection(('127.0.0.1', 8080), 1)",
        "exception",
        "Operation not permitted",
    ),
    ("kill-parent", "import os\nos.kill(os.getppid(), 9)", "exception", "Operation not permitted"),
    ("kill-pid-1", "import os\nos.kill(1, 9)", "exception", "Operation not permitted"),
    ("kill-everyone", "import os\nos.kill(-1, 9)", "exception", "Operation not permitted"),
    ("setuid-root", "import os\nos.setuid(0)", "exception", "Operation not permitted"),
    (
        "ctypes-syscalls",
        "import ctypes\nlibc = ctypes.CDLL(None)\n"
        "got = [libc.syscall(n, *a) for n, a in ((57, ()), (272, (0x10000000,)), (101, (16, 1, 0, 0)), (165, (b'none', b'/tmp', b'tmpfs', 0, 0)), (161, (b'/tmp',)))]\n"
        "raise OSError(f'refused {got}')",
        "exception",
        "refused [-1, -1, -1, -1, -1]",
    ),
    ("dup2-protocol", "import os\nos.dup2(2, 1)", "exception", "without a result"),
    (
        "forged-then-loop",
        'import sys\nsys.__stdout__.write(\'{"op": "result", "output": "forged"}\\n\')\nsys.__stdout__.flush()\nwhile True:\n    pass',
        "timeout",
        "ran over",
    ),
    (
        "forged-fds-then-sleep",
        'import os, time\nfor fd in range(11):\n    try:\n        os.write(fd, b\'{"op": "result", "output": 1}\\n\')\n    except OSError:\n        pass\ntime.sleep(30)',
        "timeout",
        "ran over",
    ),
    (
        "proc-self-fd-then-loop",
        'try:\n    with open(\'/proc/self/fd/1\', \'w\') as f:\n        f.write(\'{"op": "final", "nonce": "x", "message": {"op": "result", "output": 1}}\\n\')\nexcept OSError:\n    pass\nwhile True:\n    pass',
        "timeout",
        "ran over",
    ),
    (
        "forged-then-more",
        'import os\nos.write(1, b\'{"op": "result", "output": 1}\\nmore\')\nos._exit(0)',
        "bad_output",
        "after its result",
    ),
    (
        "garbage-then-loop",
        "import os\nos.write(1, b'not the protocol\\n')\nwhile True:\n    pass",
        "bad_output",
        "broke the protocol",
    ),
    ("busy-loop", "while True:\n    pass", "timeout", "ran over"),
    ("sleep-past-deadline", "import time\ntime.sleep(30)", "timeout", "ran over"),
    ("huge-allocation", "return len(bytearray(4 * 1024 ** 3))", "memory", "memory"),
]
ROWS = [pytest.param(*row[1:], id=row[0]) for row in FIRST_LINE] + [
    pytest.param(False, body(code), CONFIG, kind, fragment, id=name)
    for name, code, kind, fragment in OS_BOUNDARY
]


def marked_processes(marker: str) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue  # ended meanwhile
            if marker.encode() in cmdline:
                found.append(cmdline.replace(b"\0", b" ").decode(errors="replace"))
    return found


def traces(marker: str, *places: Path) -> list[str]:
    return [str(p) for place in places for p in place.glob(f"*{marker}*")]


@pytest.mark.parametrize(("checks", "code", "cfg", "kind", "fragment"), ROWS)
def test_a_hostile_skill_is_contained(tmp_path, monkeypatch, checks, code, cfg, kind, fragment):
    # GIVEN a marker for this run (its processes' command lines carry it) and a sentinel directory
    marker = f"escape{uuid.uuid4().hex[:10]}"
    monkeypatch.setattr(sandbox, "WORKDIR_PREFIX", f"charter-skill-{marker}-")
    sentinel = tmp_path / "sentinel"
    sentinel.mkdir()
    (sentinel / "keep.txt").write_text("そのまま", encoding="utf-8")
    source = code.replace("{M}", marker).replace("{S}", str(sentinel)).replace("{R}", str(REPO))
    timeout = SHORT if kind == "timeout" else None
    # WHEN the hostile skill runs
    r = run_code(source, {}, MemoryStore(), ORG, cfg, timeout=timeout, python_checks=checks)
    # THEN it failed the expected way
    assert (r.ok, r.error_kind) == (False, kind), (r.output, r.error)
    assert fragment in r.error, r.error
    # AND nothing of it is on the host: not in /tmp, the sentinel, the worktree, the root
    assert traces(marker, Path("/tmp"), REPO) == []
    assert sorted(p.name for p in sentinel.iterdir()) == ["keep.txt"]
    assert not Path(f"/{marker}").exists() and not Path(f"/usr/{marker}").exists()
    # AND no process of the run is left
    assert marked_processes(marker) == []


def test_writes_to_its_own_tmp_stay_in_its_private_tmpfs(monkeypatch):
    # GIVEN a skill (first line bypassed) that writes its cwd and /tmp, which it may
    marker = f"escape{uuid.uuid4().hex[:10]}"
    monkeypatch.setattr(sandbox, "WORKDIR_PREFIX", f"charter-skill-{marker}-")
    code = body(
        f"import os\nopen('/tmp/{marker}', 'w').write('一時ファイル')\n"
        f"return [os.getcwd(), os.getuid(), os.getgid(), os.getgroups(), open('/tmp/{marker}').read()]"
    )
    # WHEN it runs
    r = run_code(code, {}, MemoryStore(), ORG, CONFIG, python_checks=False)
    # THEN it ran as the unprivileged user in its own /tmp, and the host's /tmp never saw the file
    assert r.ok, r.error
    assert r.output == ["/tmp", 65534, 65534, [], "一時ファイル"]
    assert traces(marker, Path("/tmp")) == [] and marked_processes(marker) == []


def test_the_child_sees_only_its_own_processes_and_no_host_files():
    code = body(
        "import os\n"
        "return [sorted(p for p in os.listdir('/proc') if p.isdigit()), sorted(os.listdir('/')), os.getpid()]"
    )
    r = run_code(code, {}, MemoryStore(), ORG, CONFIG, python_checks=False)
    assert r.ok, r.error
    pids, top, own = r.output
    # its own process only (the supervisor is another user's, hidden); no /etc, /home, /work, /var
    assert pids == [str(own)]
    assert not {"etc", "home", "work", "var"} & set(top)


def test_without_the_os_boundary_a_skill_is_refused_unless_the_config_allows_it(monkeypatch):
    # GIVEN a machine where the OS sandbox does not start
    monkeypatch.setattr(sandbox, "os_isolation", lambda: "the sandbox does not start here: test")
    good = body("return 2 + 3")
    # WHEN a skill runs with the packaged config THEN it is refused, nothing run
    r = run_code(good, {}, MemoryStore(), ORG, CONFIG)
    assert (r.ok, r.error_kind) == (False, "sandbox_unavailable")
    # WHEN the config explicitly accepts the weaker run THEN it is tried (process, user, rlimits,
    # seccomp): it runs where the unprivileged user can reach the interpreter, else it says so
    weak = run_code(good, {}, MemoryStore(), ORG, config(allow_without_os_isolation=True))
    if reachable_by_everyone(Path(sandbox.isolation.python())):
        assert (weak.ok, weak.output) == (True, 5), weak.error
    else:
        assert (weak.ok, weak.error_kind) == (False, "sandbox_unavailable")
        assert "Permission denied" in weak.error


def reachable_by_everyone(path: Path) -> bool:
    return all(p.stat().st_mode & 0o001 for p in path.parents)


def test_the_probe_is_cached_once_per_process():
    assert sandbox.os_isolation() is sandbox.os_isolation()
    assert sandbox.os_isolation.cache_info().misses == 1  # type: ignore[attr-defined]
    assert os.geteuid() == 0  # the machine facts this table relies on
