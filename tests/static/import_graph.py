"""The import graph of ``shared_lib``, read from the source (AST), for the architecture tests.

Every ``import``/``from … import`` counts, including those under ``if TYPE_CHECKING:`` and
inside functions: a type-only or deferred import is still a dependency of the design.
A *package* is a direct subpackage of ``shared_lib`` (``shared_lib.brain``); a top-level
module (``shared_lib/runtime.py``) is its own node.

A feature (``shared_lib/features/<name>/``) is a room that spans floors: each of its modules is
a node by its *role*, the name up to the first ``_`` (``features.jobs.steps`` for ``steps.py``
and ``steps_report.py``, ``features.jobs.cli`` for ``cli.py``), so its state sits at the domain
floor, its steps beside the layers and its commands at the entry floor, and both rules see them
apart. The room's ``__init__`` is the node ``features.<name>``; a module loose in
``shared_lib/features/`` (the ``Manifest`` type) is ``features.<module>``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ROOT = REPO / "shared_lib"


def module_name(path: Path, repo: Path = REPO) -> str:
    rel = path.relative_to(repo).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, repo: Path = REPO, prefix: str = "shared_lib") -> set[str]:
    """Absolute names of the ``prefix`` modules ``path`` imports (any depth, any branch)."""
    me = module_name(path, repo)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    return set(_imports(path.read_text(encoding="utf-8"), package, prefix))


@lru_cache(maxsize=4096)
def _imports(text: str, package: str, prefix: str) -> frozenset[str]:
    """``imports_of`` for a module's text: the same text in the same package imports the same
    names, so the rules' many readings of the tree (and of its copies, a line changed in one
    module) parse each module once."""
    tree = ast.parse(text)
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                stem = ".".join([*base, node.module] if node.module else base)
            else:
                stem = node.module or ""
            found.add(stem)
            # ``from shared_lib import envelope`` imports the module ``shared_lib.turn.envelope``
            found.update(f"{stem}.{a.name}" for a in node.names)
    return frozenset(name for name in found if name == prefix or name.startswith(f"{prefix}."))


def node_of(module: str) -> str:
    """``shared_lib.brain.llm_arm`` -> ``brain``; ``shared_lib.runtime`` -> ``runtime``;
    ``shared_lib.features.jobs.steps_report`` -> ``features.jobs.steps`` (a room's module by role)."""
    parts = module.split(".")
    if len(parts) > 2 and parts[1] == "features":
        if len(parts) == 3:
            return f"features.{parts[2]}"
        return f"features.{parts[2]}.{parts[3].partition('_')[0]}"
    return parts[1] if len(parts) > 1 else "shared_lib"


def existing_modules(repo: Path = REPO) -> set[str]:
    return {module_name(p, repo) for p in (repo / "shared_lib").rglob("*.py")}


def package_graph(repo: Path = REPO) -> dict[str, dict[str, set[str]]]:
    """node -> imported node -> the importing modules (``a.py -> b``) that make the edge."""
    known = existing_modules(repo)
    graph: dict[str, dict[str, set[str]]] = {}
    for path in sorted((repo / "shared_lib").rglob("*.py")):
        src = module_name(path, repo)
        for target in imports_of(path, repo):
            while target not in known and "." in target:
                target = target.rpartition(".")[0]
            if target == "shared_lib" or target not in known:
                continue
            a, b = node_of(src), node_of(target)
            if a != b:
                graph.setdefault(a, {}).setdefault(b, set()).add(f"{src} -> {target}")
    return graph


def cycles(graph: dict[str, dict[str, set[str]]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    nodes: Iterable[str] = set(graph) | {b for edges in graph.values() for b in edges}
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out
