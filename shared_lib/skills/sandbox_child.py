"""The sandbox's child: runs one skill's code, started as
``python -I -S sandbox_child.py MEMORY_BYTES CPU_SECONDS OPEN_FILES``.

Its first act is to set those limits on itself (``setrlimit``: address space, CPU seconds, open
files, no file growth, no core), before it reads anything from the parent: the parent sets none
(``preexec_fn`` can deadlock a threaded parent) and keeps the wall clock and the process group.

Standard library only: it never imports ``shared_lib`` (nothing of the product, its settings or
credentials reaches this process). The parent sends one JSON line on stdin, ``{"code", "input",
"allow"}``; the child answers with JSON lines on stdout: ``{"op": "get"|"query"|"set"|"delete",
...}`` requests for the read-only view (the parent answers each on stdin), then one
``{"op": "result", "output"}`` or ``{"op": "error", "kind", "message"}``.

Before the skill's code is compiled, the modules it may import are loaded and an audit hook is
installed that refuses, for the rest of the process's life, network (``socket.*``), process
creation, ``ctypes``, every file open and change, and every import outside the allowlist. A refusal
is remembered even when the skill catches the exception: the run fails with its kind.
"""

from __future__ import annotations

import builtins
import contextlib
import io
import json
import resource
import sys
from typing import Any

_OUT = sys.stdout
_IN = sys.stdin
_refused: list[tuple[str, str]] = []
_allowed: set[str] = set()
_HELPERS = ("_strptime", "encodings.idna")  # imported lazily by ``strptime``, by "idna" host names
_armed = [False]

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
    if not _armed[0]:
        return
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
    return __import__(name, globals, locals, fromlist, level)


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
    """Set this process's limits from ``argv`` (memory bytes, CPU seconds, open files)."""
    memory, cpu, files = (int(a) for a in argv)
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def main() -> None:
    limit_self(sys.argv[1:])  # first, before the request (and the skill's code) is read
    request = json.loads(_IN.readline())
    _allowed.update(request["allow"])
    # loaded now, so no import (and no file open) is needed once the hook is armed
    for module in (*sorted(_allowed), *_HELPERS):
        with contextlib.suppress(ImportError):
            __import__(module)
    sys.addaudithook(_hook)
    code = compile(request["code"], "<skill>", "exec")  # compiled before the hook is armed
    namespace = _namespace()
    sys.stdout = io.StringIO()  # a skill's prints never reach the protocol
    _armed[0] = True
    try:
        exec(code, namespace)
        output = namespace["run"](request["input"], View())
        text = json.dumps(output, ensure_ascii=False, allow_nan=False)
    except MemoryError:
        _armed[0] = False
        _refused.append(("memory", "the skill ran out of memory"))
    except BaseException as exc:  # the skill's own failure: reported, the child ends normally
        _armed[0] = False
        if not _refused:
            kind = (
                "bad_output"
                if isinstance(exc, (TypeError, ValueError)) and "JSON" in str(exc)
                else "exception"
            )
            _result(kind, f"{type(exc).__name__}: {exc}")
            return
    _armed[0] = False
    if _refused:
        kind, event = _refused[0]
        _result(kind, event if kind == "memory" else f"refused: {event}")
        return
    _OUT.write('{"op": "result", "output": ' + text + "}\n")
    _OUT.flush()


if __name__ == "__main__":
    main()
