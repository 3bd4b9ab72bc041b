"""Untrusted skill code in a separate, limited process (seed 001 §23.4, §25: the boundary).

The parent (this module) checks the code's AST (imports from the allowlist only, no dunder
attribute), then starts ``sandbox_child.py`` with ``sys.executable -I -S``, an empty environment,
a fresh temporary directory as its working directory and its ``resource`` limits as arguments
(address space, CPU seconds, few descriptors; the child sets them, with no file growth and no core,
before it reads anything), in a new process group killed at the wall-clock timeout; inside ``unshare -rn`` (no network namespace) too when that works here, as an
extra layer. Inside the child an audit hook refuses network, processes, ``ctypes``, file opens and
changes and imports outside the allowlist (what stops ``__import__("so" + "cket")``).

The child reads the organisation only through this parent: ``view.get``/``view.query`` are served
by ``adapters.scoped``'s read-only, organisation-scoped view, and only for the collections the
skill declared (``reads``): any other fails the run (``store_read``); ``view.set``/``view.delete``
are refused there and the run fails (``store_write``). A prompt skill is a ``string.Template``: it is
rendered here, no code runs.

>>> from shared_lib.adapters.memory_store import MemoryStore
>>> from shared_lib.skills.config import load_config
>>> r = run_code("def run(input, view):\\n    return input['n'] * 2\\n", {"n": 21}, MemoryStore(), "acme", load_config())
>>> r.ok, r.output
(True, 42)
"""

from __future__ import annotations

import ast
import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

from shared_lib.adapters.scoped import CrossOrgAccess, WriteRefused, scoped
from shared_lib.errors import CharterError
from shared_lib.ports import Store
from shared_lib.skills.config import SandboxConfig
from shared_lib.skills.spec import SkillSpec, render_prompt

CHILD = Path(__file__).resolve().parent / "sandbox_child.py"
ErrorKind = Literal[
    "timeout",
    "memory",
    "network",
    "process",
    "filesystem",
    "store_write",
    "store_read",
    "import",
    "exception",
    "bad_output",
]
_KINDS = {"network", "process", "filesystem", "import", "memory", "exception", "bad_output"}
_OPS = {"==", "!=", "<", "<=", ">", ">=", "in", "array_contains"}
MAX_QUERY = 100


@dataclass(frozen=True)
class SandboxResult:
    ok: bool
    output: Any = None
    error_kind: ErrorKind | None = None
    error: str = ""
    elapsed: float = 0.0

    @classmethod
    def failed(cls, kind: ErrorKind, error: str, elapsed: float = 0.0) -> SandboxResult:
        return cls(ok=False, error_kind=kind, error=error, elapsed=elapsed)


def static_problems(code: str, allow: tuple[str, ...]) -> list[tuple[ErrorKind, str]]:
    """What the code declares that a skill may not (the runtime hook still checks everything)."""
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return [("exception", f"syntax error line {exc.lineno}: {exc.msg}")]
    found: list[tuple[ErrorKind, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [("import", f"import {a.name}") for a in node.names if a.name.split(".")[0] not in allow]
        elif isinstance(node, ast.ImportFrom) and (
            node.level or (node.module or "").split(".")[0] not in allow
        ):
            found.append(("import", f"from {'.' * node.level}{node.module or ''} import"))
        elif isinstance(node, ast.Attribute) and node.attr.startswith("__"):
            found.append(("exception", f"line {node.lineno}: dunder attribute {node.attr}"))
    if not any(isinstance(n, ast.FunctionDef) and n.name == "run" for n in tree.body):
        found.append(("exception", "no top-level function run(input, view)"))
    return found


@cache
def _namespace_prefix() -> tuple[str, ...]:
    """``unshare -rn`` when this machine lets an unprivileged process make a network namespace."""
    tool = shutil.which("unshare")
    if tool is None:
        return ()
    try:
        probe = subprocess.run([tool, "-rn", "true"], env={}, capture_output=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return ()
    return (tool, "-rn") if probe.returncode == 0 else ()


def _limits(config: SandboxConfig, timeout: float) -> list[str]:
    """The child's limits, as its arguments: it sets them itself, first thing (no ``preexec_fn``:
    running Python between fork and exec can deadlock a threaded parent)."""
    return [str(config.memory_mb * 1024 * 1024), str(int(timeout) + 1), str(config.max_open_files)]


class _Parent:
    """Serves one child's view requests; remembers a refused write."""

    def __init__(self, store: Store, org_id: str, reads: tuple[str, ...]) -> None:
        self.view = scoped(store, org_id, read_only=True)
        self.prefix = f"orgs/{org_id}"
        self.reads = frozenset(reads)
        self.refusal: tuple[ErrorKind, str] | None = None

    def _collection(self, message: dict[str, Any]) -> str:
        name = str(message.get("collection", ""))
        if not name or "/" in name:
            raise CrossOrgAccess(f"collection {name!r} is not a collection of the organisation")
        return f"{self.prefix}/{name}"

    def answer(self, message: dict[str, Any]) -> dict[str, Any]:
        op = message.get("op")
        try:
            if op in ("set", "delete"):
                path = f"{self._collection(message)}/{message.get('id', '')}"
                if op == "set":
                    self.view.set(path, dict(message.get("data") or {}))
                else:
                    self.view.delete(path)
            if (
                op in ("get", "query")
                and self._collection(message)
                and message["collection"] not in self.reads
            ):
                self.refusal = self.refusal or (
                    "store_read",
                    f"the skill did not declare it reads {str(message.get('collection'))[:60]!r}",
                )
                return {"error": "the skill may not read this collection"}
            if op == "get":
                doc_id = str(message.get("id", ""))
                if not doc_id or "/" in doc_id:
                    raise CrossOrgAccess(f"document id {doc_id!r} is not an id")
                return {"value": self.view.get(f"{self._collection(message)}/{doc_id}")}
            if op == "query":
                where = [(str(f), str(o), v) for f, o, v in message.get("where", [])]
                if any(o not in _OPS for _, o, _ in where):
                    raise ValueError(f"a query's operators are {sorted(_OPS)}")
                limit = max(1, min(int(message.get("limit", 20)), MAX_QUERY))
                rows = self.view.query(self._collection(message), where=where, limit=limit)  # type: ignore[arg-type]
                return {"value": [{"id": doc_id.rsplit("/", 1)[-1], **doc} for doc_id, doc in rows]}
            raise CrossOrgAccess(f"unknown request {op!r}")
        except WriteRefused as exc:
            self.refusal = self.refusal or ("store_write", f"the store is read-only for a skill: {exc}")
            return {"error": "the store is read-only for a skill"}
        except CrossOrgAccess as exc:
            self.refusal = self.refusal or ("exception", f"refused: {exc}")
            return {"error": str(exc)}
        except (CharterError, ValueError, TypeError) as exc:
            return {"error": f"{type(exc).__name__}: {exc}"}


def _command(limits: list[str]) -> list[str]:
    return [*_namespace_prefix(), sys.executable, "-I", "-S", str(CHILD), *limits]


def _exchange(
    proc: subprocess.Popen[bytes], parent: _Parent, config: SandboxConfig, deadline: float
) -> SandboxResult | None:
    """Serve the child until its last message; ``None`` when it ran out of time."""
    assert proc.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        return _serve(proc, parent, config, deadline, selector)


def _serve(
    proc: subprocess.Popen[bytes],
    parent: _Parent,
    config: SandboxConfig,
    deadline: float,
    selector: selectors.BaseSelector,
) -> SandboxResult | None:
    assert proc.stdout is not None and proc.stdin is not None
    buffer = b""
    limit = config.max_output_bytes + 1024
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not selector.select(left):
            return None
        chunk = os.read(proc.stdout.fileno(), 65536)
        if not chunk:
            return SandboxResult.failed("exception", "the skill's process ended without a result")
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            message = json.loads(line)
            if message.get("op") in ("result", "error"):
                return _final(message, len(line), config)
            reply = json.dumps(parent.answer(message), ensure_ascii=False, default=str)
            proc.stdin.write(reply.encode() + b"\n")
            proc.stdin.flush()
        if len(buffer) > limit:
            return SandboxResult.failed("bad_output", f"output over {config.max_output_bytes} bytes")


def _final(message: dict[str, Any], size: int, config: SandboxConfig) -> SandboxResult:
    if message["op"] == "error":
        kind = message.get("kind")
        return SandboxResult.failed(kind if kind in _KINDS else "exception", str(message.get("message", "")))
    if size > config.max_output_bytes:
        return SandboxResult.failed("bad_output", f"output over {config.max_output_bytes} bytes")
    return SandboxResult(ok=True, output=message.get("output"))


def _after_exit(proc: subprocess.Popen[bytes]) -> SandboxResult:
    stderr = proc.stderr.read()[-2000:].decode(errors="replace") if proc.stderr else ""
    if proc.returncode in (-signal.SIGXCPU, -signal.SIGKILL):
        return SandboxResult.failed("timeout", "the skill used up its CPU time")
    if "MemoryError" in stderr:
        return SandboxResult.failed("memory", "the skill ran out of memory")
    return SandboxResult.failed(
        "exception", f"the skill's process ended ({proc.returncode}): {stderr[-300:]}"
    )


def run_code(
    code: str,
    input: dict[str, Any],
    store: Store,
    org_id: str,
    config: SandboxConfig,
    *,
    timeout: float | None = None,
    reads: tuple[str, ...] = (),
) -> SandboxResult:
    """``run(input, view)`` of ``code`` in the sandbox, its view limited to the ``reads``
    collections; its JSON output or why it failed."""
    started = time.monotonic()
    seconds = min(timeout or config.timeout_seconds, config.max_timeout_seconds)
    problems = static_problems(code, config.import_allowlist)
    if problems:
        kind, detail = problems[0]
        return SandboxResult.failed(kind, f"refused before running: {detail}")
    parent = _Parent(store, org_id, reads)
    request = {"code": code, "input": input, "allow": list(config.import_allowlist)}
    with tempfile.TemporaryDirectory(prefix="charter-skill-") as workdir:
        proc = subprocess.Popen(
            _command(_limits(config, seconds)),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={},
            cwd=workdir,
            start_new_session=True,  # its own process group: the timeout kills all of it
        )
        try:
            assert proc.stdin is not None
            proc.stdin.write(json.dumps(request, ensure_ascii=False).encode() + b"\n")
            proc.stdin.flush()
            result = _exchange(proc, parent, config, started + seconds)
        except (BrokenPipeError, ValueError) as exc:
            result = SandboxResult.failed("exception", f"the skill's process broke the protocol: {exc}")
        finally:
            if result_pending := proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if result is None:
            result = (
                SandboxResult.failed("timeout", f"the skill ran over {seconds:g} s")
                if result_pending
                else None
            )
        if result is None or (not result.ok and result.error.startswith("the skill's process ended")):
            result = _after_exit(proc)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    if parent.refusal:
        result = SandboxResult.failed(*parent.refusal)
    return SandboxResult(
        result.ok, result.output, result.error_kind, result.error, time.monotonic() - started
    )


def run_skill(
    spec: SkillSpec, input: dict[str, Any], store: Store, org_id: str, config: SandboxConfig
) -> SandboxResult:
    """A skill on one input: code in the sandbox, a prompt template rendered (text)."""
    if spec.kind == "code":
        return run_code(spec.implementation, input, store, org_id, config, reads=tuple(spec.reads))
    started = time.monotonic()
    try:
        text = render_prompt(spec.implementation, input)
    except (KeyError, ValueError) as exc:
        return SandboxResult.failed("exception", f"template: {exc}")
    if len(text.encode("utf-8")) > config.max_output_bytes:
        return SandboxResult.failed("bad_output", f"output over {config.max_output_bytes} bytes")
    return SandboxResult(ok=True, output=text, elapsed=time.monotonic() - started)
