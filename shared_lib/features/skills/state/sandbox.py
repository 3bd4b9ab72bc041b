"""Untrusted skill code behind the operating system's walls (seed 001 §25: the boundary; issue 33).

The parent (this module) checks the code's AST (imports from the allowlist only, no dunder
attribute), then, where ``os_isolation()`` says this machine can, starts the supervisor
(``sandbox_init.py``) inside new mount, PID, network, IPC and UTS namespaces, in a process group
of its own killed at the wall-clock timeout (the supervisor is the PID namespace's init: every
process of the run dies with it). The supervisor builds a read-only root with a private tmpfs and
runs the child (``sandbox_child.py``) as an unprivileged user; the child sets its rlimits and a
seccomp filter on itself before it reads the code (``isolation``'s and the three processes'
docstrings say how). Where the machine cannot, a code skill is refused (``sandbox_unavailable``)
unless the config accepts the weaker run. The Python checks in the child (guarded import, an
audit hook) are a first line only.

A result counts only as the supervisor's ``final`` line carrying the nonce this parent made for
the run, and only if the supervisor then ends with status 0 before the deadline: the skill can
write to nothing but its pipes to the supervisor, which vouches for the child's line only once the
child has ended cleanly with nothing after it.

The child reads the organisation only through this parent: ``view.get``/``view.query`` are served
by ``adapters.scoped``'s read-only, organisation-scoped view, and only for the collections the
skill declared (``reads``): any other fails the run (``store_read``); ``view.set``/``view.delete``
are refused there and the run fails (``store_write``). A prompt skill is a ``string.Template``: it is
rendered here, no code runs.

>>> from shared_lib.adapters.memory_store import MemoryStore
>>> from shared_lib.features.skills.state.config import load_config
>>> r = run_code("def run(input, view):\\n    return input['n'] * 2\\n", {"n": 21}, MemoryStore(), "acme", load_config())
>>> r.ok, r.output
(True, 42)
"""

from __future__ import annotations

import ast
import hmac
import json
import logging
import os
import secrets
import selectors
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.adapters.scoped import CrossOrgAccess, WriteRefused, scoped
from shared_lib.errors import CharterError
from shared_lib.features.skills.state import isolation
from shared_lib.features.skills.state.config import SandboxConfig, packaged
from shared_lib.features.skills.state.isolation import SUPERVISOR
from shared_lib.features.skills.state.spec import SkillSpec, render_prompt
from shared_lib.ports import Store

log = logging.getLogger(__name__)
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
    "sandbox_unavailable",
]
_KINDS = {
    "network",
    "process",
    "filesystem",
    "import",
    "memory",
    "timeout",
    "exception",
    "bad_output",
    "sandbox_unavailable",
}
VIEW_OPS = ("get", "query", "set", "delete")
PROBE = "def run(input, view):\n    return 'ok'\n"
PROBE_SECONDS = 10.0
WORKDIR_PREFIX = "charter-skill-"  # the run's label: both processes' command lines carry it
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
def os_isolation() -> str | None:
    """``None`` when this machine runs a skill behind the OS boundary; else why not. Probed once
    per process: a trivial skill through the whole chain (``isolation``'s docstring)."""
    reason = isolation.unavailable_reason()
    if reason is not None:
        return reason
    parent = _Parent(MemoryStore(), "probe", ())
    probe = _run_process(PROBE, {}, parent, packaged(), PROBE_SECONDS, isolated=True)
    if probe.ok and probe.output == "ok":
        return None
    log.warning("the skill sandbox is not available here: %s %s", probe.error_kind, probe.error)
    return f"the sandbox does not start here: {probe.error_kind}: {probe.error[:200]}"


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


def _exchange(
    proc: subprocess.Popen[bytes], parent: _Parent, config: SandboxConfig, deadline: float, nonce: str
) -> SandboxResult | None:
    """Serve the supervisor until its final line; ``None`` when it ran out of time."""
    assert proc.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        return _serve(proc, parent, config, deadline, selector, nonce)


def _serve(
    proc: subprocess.Popen[bytes],
    parent: _Parent,
    config: SandboxConfig,
    deadline: float,
    selector: selectors.BaseSelector,
    nonce: str,
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
            if message.get("op") == "final":
                return _final(message, nonce, config)
            if message.get("op") not in VIEW_OPS:
                return SandboxResult.failed("bad_output", "the sandbox's supervisor broke the protocol")
            reply = json.dumps(parent.answer(message), ensure_ascii=False, default=str)
            proc.stdin.write(reply.encode() + b"\n")
            proc.stdin.flush()
        if len(buffer) > limit:
            return SandboxResult.failed("bad_output", f"output over {config.max_output_bytes} bytes")


def _final(frame: dict[str, Any], nonce: str, config: SandboxConfig) -> SandboxResult:
    """The supervisor's report: accepted only with this run's nonce (the skill never has it)."""
    message = frame.get("message")
    if not hmac.compare_digest(str(frame.get("nonce", "")), nonce) or not isinstance(message, dict):
        return SandboxResult.failed("bad_output", "a result without the run's nonce")
    if message.get("op") == "error":
        kind = message.get("kind")
        return SandboxResult.failed(kind if kind in _KINDS else "exception", str(message.get("message", "")))
    if message.get("op") != "result":
        return SandboxResult.failed("bad_output", "the skill broke the protocol")
    size = len(json.dumps(message.get("output"), ensure_ascii=False).encode())
    if size > config.max_output_bytes:
        return SandboxResult.failed("bad_output", f"output over {config.max_output_bytes} bytes")
    return SandboxResult(ok=True, output=message.get("output"))


def _run_process(
    code: str,
    input: dict[str, Any],
    parent: _Parent,
    config: SandboxConfig,
    seconds: float,
    *,
    isolated: bool,
    python_checks: bool = True,
) -> SandboxResult:
    """One run of the supervisor and its child; the process group (and, isolated, the PID
    namespace) killed by the deadline. A result counts only if the supervisor reported it, with
    the nonce, and then ended with status 0 before the deadline."""
    deadline = time.monotonic() + seconds
    nonce = secrets.token_hex(16)
    request = {
        "nonce": nonce,
        "code": code,
        "input": input,
        "allow": list(config.import_allowlist),
        "checks": python_checks,
    }
    with tempfile.TemporaryDirectory(prefix=WORKDIR_PREFIX) as workdir:
        argument = json.dumps(isolation.settings(config, seconds, workdir, isolated=isolated))
        proc = subprocess.Popen(
            [*isolation.prefix(isolated=isolated), isolation.python(), "-I", "-S", str(SUPERVISOR), argument],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={},
            cwd=workdir,
            start_new_session=True,  # its own process group: the deadline kills all of it
        )
        try:
            assert proc.stdin is not None
            proc.stdin.write(json.dumps(request, ensure_ascii=False).encode() + b"\n")
            proc.stdin.flush()
            result = _exchange(proc, parent, config, deadline, nonce)
            if result is not None and proc.wait(max(0.0, deadline - time.monotonic())) != 0:
                result = SandboxResult.failed("exception", f"the sandbox ended ({proc.returncode})")
        except subprocess.TimeoutExpired:
            result = None
        except (BrokenPipeError, ValueError) as exc:
            result = SandboxResult.failed("exception", f"the skill's process broke the protocol: {exc}")
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        stderr = proc.stderr.read(65536)[-2000:].decode(errors="replace") if proc.stderr else ""
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    if result is None:
        return SandboxResult.failed("timeout", f"the skill ran over {seconds:g} s")
    if result.error_kind == "exception" and "MemoryError" in stderr:
        return SandboxResult.failed("memory", "the skill ran out of memory")
    if result.error_kind == "exception" and result.error.startswith("the skill's process ended"):
        return SandboxResult.failed("exception", f"{result.error}: {stderr[-300:]}")
    return result


def run_code(
    code: str,
    input: dict[str, Any],
    store: Store,
    org_id: str,
    config: SandboxConfig,
    *,
    timeout: float | None = None,
    reads: tuple[str, ...] = (),
    python_checks: bool = True,
) -> SandboxResult:
    """``run(input, view)`` of ``code`` in the sandbox, its view limited to the ``reads``
    collections; its JSON output or why it failed. Where the OS boundary is not available here
    it refuses (``sandbox_unavailable``) unless the config accepts the weaker run.
    ``python_checks=False`` (tests only) leaves out the first line (the AST check, the guarded
    import and builtins, the audit hook) to show the OS boundary holds without it."""
    started = time.monotonic()
    seconds = min(timeout or config.timeout_seconds, config.max_timeout_seconds)
    problems = static_problems(code, config.import_allowlist) if python_checks else []
    if problems:
        kind, detail = problems[0]
        return SandboxResult.failed(kind, f"refused before running: {detail}")
    unavailable = os_isolation()
    if unavailable is not None and not config.allow_without_os_isolation:
        return SandboxResult.failed("sandbox_unavailable", f"refused: {unavailable}")
    parent = _Parent(store, org_id, reads)
    result = _run_process(
        code, input, parent, config, seconds, isolated=unavailable is None, python_checks=python_checks
    )
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
