"""Nothing is printed outside the log handler on the serving path (issue 21, deliverable 2).

A line a service writes to stdout or stderr by itself is a line Cloud Logging reads as plain
text: no severity, no trace, no turn, and not masked. So ``shared_lib`` and ``functions`` never
``print``, write to ``sys.stdout``/``sys.stderr`` or print a traceback; they log
(``logging.getLogger(__name__)`` or ``shared_lib.observability.logs.log_event``), and the one handler writes.
"""

from __future__ import annotations

import ast
from fnmatch import fnmatchcase
from functools import lru_cache
from pathlib import Path

import pytest
from import_graph import REPO, imports_of

# The modules that may write to the process's streams, and why.
ALLOWED: dict[str, str] = {
    "shared_lib/observability/logs.py": "the log handler itself: it writes every record's line to stderr",
    "shared_lib/cli/": "the operator command line: its output is what it prints (never a service)",
    "shared_lib/features/*/cli*.py": "a feature's operator commands: the command line's, loaded only by it",
    "shared_lib/evals/": "the eval harness: only `charter eval run` (infra/eval_cli.py) runs it",
    "shared_lib/features/skills/state/sandbox_child.py": "the sandbox's child process: stdout is its protocol with the parent",
    "shared_lib/features/skills/state/sandbox_init.py": "the sandbox's supervisor process: stdout is its protocol with the parent",
}
STREAMS = {"sys.stdout", "sys.stderr", "sys.__stdout__", "sys.__stderr__"}
PRINTERS = {
    "traceback": {"print_exc", "print_exception", "print_stack", "print_tb", "print_last"},
    "pprint": {"pprint", "pp"},
}


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def _prints(tree: ast.Module) -> list[int]:
    """Line numbers in ``tree`` of a print, a traceback printed, or any use of the process's
    streams (written, or handed to a handler or to ``print(file=…)``)."""
    imported = {  # print_exc / pprint imported by name
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module in PRINTERS
        for alias in node.names
        if alias.name in PRINTERS[node.module]
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _dotted(node) in STREAMS:
            found.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "sys":
            found += [node.lineno for alias in node.names if f"sys.{alias.name}" in STREAMS]
        elif isinstance(node, ast.Call):
            module, _, attr = _dotted(node.func).rpartition(".")
            if (not module and attr in ("print", *imported)) or attr in PRINTERS.get(module, ()):
                found.append(node.lineno)
    return sorted(set(found))


@lru_cache(maxsize=4096)
def _prints_in(source: str) -> tuple[int, ...]:
    """``_prints`` of a module's source, kept by its text: the mutation tests scan a copy of the
    tree in which one file differs, and only that file is parsed again."""
    return tuple(_prints(ast.parse(source)))


def allowed(rel: str) -> bool:
    """``rel`` (``shared_lib/cli/x.py``) is one of ``ALLOWED``: a file, a folder or a pattern."""
    return any(
        rel == a or (a.endswith("/") and rel.startswith(a)) or ("*" in a and fnmatchcase(rel, a))
        for a in ALLOWED
    )


def printing_calls(repo: Path) -> list[str]:
    """``file:line`` of every print or stream write outside ``ALLOWED`` in ``shared_lib`` and ``functions``."""
    found = []
    for tree_name in ("shared_lib", "functions"):
        for path in sorted((repo / tree_name).rglob("*.py")):
            rel = path.relative_to(repo).as_posix()
            if allowed(rel):
                continue
            found += [f"{rel}:{line}" for line in _prints_in(path.read_text(encoding="utf-8"))]
    return found


def test_nothing_on_the_serving_path_prints() -> None:
    assert printing_calls(REPO) == []


@pytest.mark.parametrize(
    ("where", "code"),
    [
        ("shared_lib/layers/guardian.py", "print('verdict', 1)"),
        ("shared_lib/features/jobs/steps.py", "print('job', 1)"),  # a room's module beside its cli.py
        ("shared_lib/adapters/pubsub_bus.py", "import sys\nsys.stderr.write('published\\n')"),
        ("shared_lib/wiring/push.py", "import sys\nsys.stdout.buffer.write(b'x')"),
        (
            "shared_lib/layers/base.py",
            "import logging, sys\nlogging.getLogger().addHandler(logging.StreamHandler(sys.stdout))",
        ),
        ("shared_lib/telemetry/alerts.py", "from sys import stderr"),
        ("functions/brain.py", "import traceback\ntraceback.print_exc()"),
        ("shared_lib/brain/vault.py", "from traceback import print_exc as show\nshow()"),
        ("shared_lib/ops/monitoring.py", "from pprint import pprint\npprint({})"),
    ],
)
def test_a_new_print_is_caught(repo_copy: Path, where: str, code: str) -> None:
    # GIVEN a copy of the tree, WHEN a module writes to a stream by itself
    path = repo_copy / where
    before = len(path.read_text(encoding="utf-8").splitlines())
    path.write_text(path.read_text(encoding="utf-8") + "\n" + code + "\n", encoding="utf-8")
    # THEN the check names that line
    assert printing_calls(repo_copy) == [f"{where}:{before + 1 + len(code.splitlines())}"]


def test_the_allowed_folders_are_off_the_serving_path() -> None:
    # no service module (functions/, shared_lib outside the allowed folders) imports them
    folders = tuple(f for f in ALLOWED if f.endswith("/") or "*" in f)
    importers = [
        f"{rel} -> {name}"
        for tree_name in ("shared_lib", "functions")
        for path in sorted((REPO / tree_name).rglob("*.py"))
        if not allowed(rel := path.relative_to(REPO).as_posix())
        for name in imports_of(path, REPO)
        if any(
            f"{name}.".startswith(f.replace("/", ".")) or fnmatchcase(name.replace(".", "/") + ".py", f)
            for f in folders
        )
    ]
    assert importers == []
    assert _prints(
        ast.parse((REPO / "shared_lib" / "observability" / "logs.py").read_text(encoding="utf-8"))
    )  # still needed
