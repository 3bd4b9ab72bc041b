"""The sandbox's child: runs one skill's code, started by the supervisor (``sandbox_init.py``) as
``python -I -S sandbox_child.py MEMORY_BYTES CPU_SECONDS OPEN_FILES FILE_BYTES PROCESSES``, as an
unprivileged user inside the run's namespaces and read-only root.

Its first acts, before it reads anything: set its limits (``setrlimit``: address space, CPU
seconds, open files, file size, processes — the per-user count, so no fork and few threads —
and no core), ``PR_SET_NO_NEW_PRIVS``, then its seccomp filter (``sandbox_seccomp``: a BPF
program it installs on itself; once in place no code of this process can lift it). Only then
does it read the request; the skill's code is in it.

Standard library only: it never imports ``shared_lib`` (nothing of the product, its settings or
credentials reaches this process). The supervisor sends one JSON line on stdin, ``{"code", "input",
"allow"}``; the child answers with JSON lines on stdout: ``{"op": "get"|"query"|"set"|"delete",
...}`` requests for the read-only view (answered on stdin), then one ``{"op": "result", "output"}``
or ``{"op": "error", "kind", "message"}``. Whatever this process writes the skill could write too:
the supervisor, not this process, vouches for the result (see ``sandbox_init``).

A first line, not the boundary: before the skill's code is compiled, the modules it may import
are loaded and an audit hook is installed that refuses, for the rest of the process's life (it
has no switch to turn it off), network (``socket.*``), process creation, ``ctypes``, every file
open and change, and every import outside the allowlist; an allowed module reaches the skill as
a copy of its public names, without the modules it imported (``datetime.sys``) and without
``string.Formatter`` (an attribute walk that no dunder in the source shows). A refusal is
remembered even when the skill catches the exception: the run fails with its kind.
"""

from __future__ import annotations

import builtins
import contextlib
import io
import json
import os
import resource
import sys
import types
from typing import Any

_OUT = sys.stdout
_IN = sys.stdin
_refused: list[tuple[str, str]] = []
_allowed: set[str] = set()
_HELPERS = ("_strptime", "encodings.idna")  # imported lazily by ``strptime``, by "idna" host names

_PREFIXES = (
    ("socket.", "network"),
    ("ssl.", "network"),
    ("urllib.", "network"),
    ("http.", "network"),
    ("ftplib.", "network"),
    ("smtplib.", "network"),
    ("subprocess.", "process"),
    ("os.exec", "process"),
    ("os.spawn", "process"),
    ("os.posix_spawn", "process"),
    ("os.fork", "process"),
    ("os.forkpty", "process"),
    ("os.kill", "process"),
    ("os.killpg", "process"),
    ("os.system", "process"),
    ("os.startfile", "process"),
    ("pty.", "process"),
    ("ctypes.", "process"),
    ("shutil.", "filesystem"),
    ("os.remove", "filesystem"),
    ("os.rename", "filesystem"),
    ("os.rmdir", "filesystem"),
    ("os.mkdir", "filesystem"),
    ("os.chmod", "filesystem"),
    ("os.chown", "filesystem"),
    ("os.link", "filesystem"),
    ("os.symlink", "filesystem"),
    ("os.truncate", "filesystem"),
    ("os.utime", "filesystem"),
    ("os.chdir", "filesystem"),
    ("os.listdir", "filesystem"),
    ("os.scandir", "filesystem"),
    ("os.putenv", "process"),
    ("sys.addaudithook", "process"),
    ("marshal.", "process"),
)
# builtins ``compile``/``exec`` are not in the skill's namespace; the stdlib's own use of them
# (``collections.namedtuple``) is allowed
_EXACT = {"getaddrinfo": "network", "open": "filesystem"}


def _kind(event: str, args: tuple[Any, ...]) -> str | None:
    if event == "import":
        name = str(args[0]) if args else ""
        return None if name.split(".")[0] in _allowed else "import"
    if event in _EXACT:
        return _EXACT[event]
    for prefix, kind in _PREFIXES:
        if event.startswith(prefix):
            return kind
    return None


def _hook(event: str, args: tuple[Any, ...]) -> None:
    kind = _kind(event, args)
    if kind is not None:
        _refused.append((kind, f"{event} {args[0]}" if event == "import" and args else event))
        raise PermissionError(f"{event} is not allowed in a skill")


def _send(message: dict[str, Any]) -> None:
    _OUT.write(json.dumps(message, ensure_ascii=False) + "\n")
    _OUT.flush()


def _ask(message: dict[str, Any]) -> Any:
    _send(message)
    reply = json.loads(_IN.readline() or "{}")
    if "error" in reply:
        raise PermissionError(reply["error"])
    return reply.get("value")


class View:
    """The organisation's read-only view, served by the parent (writes are refused there)."""

    def get(self, collection: str, doc_id: str) -> Any:
        return _ask({"op": "get", "collection": str(collection), "id": str(doc_id)})

    def query(self, collection: str, where: Any = (), limit: int = 20) -> Any:
        clauses = [list(c) for c in where]
        return _ask({"op": "query", "collection": str(collection), "where": clauses, "limit": int(limit)})

    def set(self, collection: str, doc_id: str, data: Any) -> Any:
        return _ask({"op": "set", "collection": str(collection), "id": str(doc_id), "data": data})

    def delete(self, collection: str, doc_id: str) -> Any:
        return _ask({"op": "delete", "collection": str(collection), "id": str(doc_id)})


def _guarded_import(
    name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0
) -> Any:
    if level or (name.split(".")[0] not in _allowed and name not in _HELPERS):
        _refused.append(("import", name))
        raise PermissionError(f"import of {name} is not allowed in a skill")
    module = __import__(name, globals, locals, fromlist, level)
    return _public.get(module.__name__, module)


_HIDDEN = {"string": ("Formatter",)}  # Formatter().get_field walks attributes, dunders included
_public: dict[str, types.ModuleType] = {}


def _public_copy(module: types.ModuleType) -> types.ModuleType:
    """What a skill gets for an allowed module: its public names, without the modules it imported."""
    copy = types.ModuleType(module.__name__)
    hidden = _HIDDEN.get(module.__name__, ())
    for key, value in vars(module).items():
        top = getattr(value, "__name__", "").split(".")[0] if isinstance(value, types.ModuleType) else ""
        if key.startswith("_") or key in hidden or (top and top not in _allowed):
            continue
        setattr(copy, key, value)
    return copy


_UNSAFE_BUILTINS: tuple[str, ...] = (
    "open",
    "eval",
    "exec",
    "compile",
    "input",
    "breakpoint",
    "globals",
    "locals",
    "vars",
)
_UNSAFE_BUILTINS += ("getattr", "setattr", "delattr", "help", "exit", "quit", "memoryview", "__loader__")


def _namespace() -> dict[str, Any]:
    names = {k: v for k, v in vars(builtins).items() if k not in _UNSAFE_BUILTINS}
    names["__import__"] = _guarded_import
    return {"__builtins__": names, "__name__": "skill"}


def _result(kind: str, message: str) -> None:
    _send({"op": "error", "kind": kind, "message": message[:500]})


def limit_self(argv: list[str]) -> None:
    """Set this process's limits from ``argv`` (memory bytes, CPU seconds, open files, file
    bytes, processes of its user)."""
    memory, cpu, files, file_bytes, processes = (int(a) for a in argv[:5])  # then the run's label
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
    resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))


def _confine() -> str | None:
    """Limits, no new privileges and the seccomp filter, on this process; why not, or ``None``."""
    limit_self(sys.argv[1:])
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    try:
        import sandbox_seccomp  # beside this file, not a package module here

        sandbox_seccomp.install()
    except (OSError, ImportError) as exc:
        return f"the seccomp filter could not be installed: {exc}"
    finally:
        sys.path.pop(0)
    for name in [n for n in sys.modules if n.split(".")[0] in ("ctypes", "_ctypes", "sandbox_seccomp")]:
        sys.modules.pop(name, None)  # not left for the skill to find
    return None


def main() -> None:
    refused = _confine()  # first, before the request (and the skill's code) is read
    if refused:
        _result("sandbox_unavailable", refused)
        return
    request = json.loads(_IN.readline())
    _allowed.update(request["allow"])
    # loaded now, so no import (and no file open) is needed once the hook is armed
    for module in (*sorted(_allowed), *_HELPERS):
        with contextlib.suppress(ImportError):
            __import__(module)
    for module in sorted(_allowed):
        if module in sys.modules:
            _public[module] = _public_copy(sys.modules[module])
    code = compile(request["code"], "<skill>", "exec")  # compiled before the hook is armed
    # ``checks`` false: only the tests that show the OS boundary holds without this first line
    checks = request.get("checks", True) is not False
    namespace: dict[str, Any] = _namespace() if checks else {"__name__": "skill"}
    sys.stdout = io.StringIO()  # a skill's prints never reach the protocol
    if checks:
        sys.addaudithook(_hook)  # armed for good: there is no flag to turn it off
    try:
        exec(code, namespace)
        output = namespace["run"](request["input"], View())
        text = json.dumps(output, ensure_ascii=False, allow_nan=False)
    except MemoryError:
        _refused.append(("memory", "the skill ran out of memory"))
    except BaseException as exc:  # the skill's own failure: reported, the child ends normally
        if not _refused:
            kind = (
                "bad_output"
                if isinstance(exc, (TypeError, ValueError)) and "JSON" in str(exc)
                else "exception"
            )
            _result(kind, f"{type(exc).__name__}: {exc}")
            return
    if _refused:
        kind, event = _refused[0]
        _result(kind, event if kind == "memory" else f"refused: {event}")
        return
    _OUT.write('{"op": "result", "output": ' + text + "}\n")
    _OUT.flush()


if __name__ == "__main__":
    main()
