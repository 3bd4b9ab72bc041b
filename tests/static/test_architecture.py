"""The house rules no single unit test owns (docs/ARCHITECTURE.md), checked on the source.

* no package-level import cycle inside ``shared_lib`` (every import counts, ``TYPE_CHECKING``
  and function-level ones included);
* ``shared_lib`` never imports ``infra``; ``shared_lib.runtime`` imports no layer, adapter or
  the composition root;
* only the settings model and the composition root read the environment (``shared_lib/``
  and ``functions/``);
* no product module over 400 lines.

Each rule is also shown to catch a deliberate violation in a copy of the tree.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest
from import_graph import REPO, cycles, imports_of, module_name, package_graph

# The floors of docs/ARCHITECTURE.md: a room imports only rooms of its floor or below.
FLOORS: dict[str, int] = {
    **dict.fromkeys(
        [
            "settings",
            "ports",
            "turn",
            "errors",
            "ids",
            "delivery",
            "collections",
            "privacy",
            "persona",
            "prices",
            "tracing",
            "observability",
            "dates",
        ],
        1,
    ),
    **dict.fromkeys(("adapters", "flags", "channels", "peers"), 2),
    **dict.fromkeys(
        (
            "tools",
            "policy",
            "state",
            "memory",
            "context",
            "rollout",
            "telemetry",
            "demo_data",
            "routing",
            "loop",
            "finetune",
        ),
        3,
    ),
    "runtime": 4,
    "brain": 5,
    "layers": 6,
    "wiring": 7,
    **dict.fromkeys(("admin", "ops", "cli", "evals"), 8),
    "features": 1,  # the package's docstring: it imports nothing
    "features.manifest": 7,  # the Manifest type: the rooms' manifests and the composition root use it
}
# A feature's room spans floors: each module stands on the floor of its role (``import_graph``:
# the name up to the first ``_``). Its ``__init__`` (``features.<name>``) is a docstring: floor 1.
ROLE_FLOORS: dict[str, int] = {
    **dict.fromkeys(("state", "store", "handlers"), 3),
    "steps": 6,
    "manifest": 7,
    **dict.fromkeys(("cli", "admin"), 8),
}
ENV_READERS = {"shared_lib/settings/model.py", "shared_lib/wiring/composition.py"}
MAX_LINES = 400


def package_cycles(repo: Path) -> list[list[str]]:
    return cycles(package_graph(repo))


def infra_imports(repo: Path) -> list[str]:
    """``shared_lib`` modules that import ``infra`` (statically, or by name through importlib)."""
    found = []
    for path in sorted((repo / "shared_lib").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if imports_of(path, repo, prefix="infra") or '"infra.' in text or "'infra." in text:
            found.append(str(path.relative_to(repo)))
    return found


def runtime_imports(repo: Path) -> set[str]:
    """What ``shared_lib/runtime.py`` imports that a low module must not."""
    names = imports_of(repo / "shared_lib" / "runtime.py", repo)
    return {
        n
        for n in names
        if n.startswith(
            ("shared_lib.layers", "shared_lib.adapters", "shared_lib.wiring.composition", "shared_lib.brain")
        )
    }


def environment_reads(repo: Path) -> list[str]:
    """``file:line`` of every read of the process environment outside the allowed modules."""
    found = []
    for tree_name in ("shared_lib", "functions"):
        for path in sorted((repo / tree_name).rglob("*.py")):
            rel = str(path.relative_to(repo))
            if rel in ENV_READERS:
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                hit = (
                    isinstance(node, ast.Attribute)
                    and node.attr in ("environ", "environb", "getenv", "putenv", "unsetenv")
                    and isinstance(node.value, ast.Name)
                    and node.value.id == "os"
                ) or (
                    isinstance(node, ast.ImportFrom)
                    and node.module == "os"
                    and any(a.name in ("environ", "getenv") for a in node.names)
                )
                if hit:
                    found.append(f"{rel}:{node.lineno}")
    return found


def long_modules(repo: Path) -> list[str]:
    return [
        f"{path.relative_to(repo)} ({n} lines)"
        for path in sorted((repo / "shared_lib").rglob("*.py"))
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    ]


@pytest.fixture
def tree_copy(tmp_path: Path) -> Path:
    for name in ("shared_lib", "functions"):
        shutil.copytree(REPO / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def test_shared_lib_has_no_package_level_import_cycle() -> None:
    assert package_cycles(REPO) == []


def floor_of(node: str) -> int | None:
    """A room's floor; a feature's module by its role (``features.jobs.steps`` -> 6)."""
    if node in FLOORS:
        return FLOORS[node]
    parts = node.split(".")
    if parts[0] == "features" and len(parts) == 2:
        return 1
    if parts[0] == "features" and len(parts) == 3:
        return ROLE_FLOORS.get(parts[2])
    return None


def upward_imports(repo: Path) -> list[str]:
    """Edges that import a room of a higher floor (or a room the floors do not name)."""
    found = []
    for a, edges in sorted(package_graph(repo).items()):
        for b, why in sorted(edges.items()):
            fa, fb = floor_of(a), floor_of(b)
            if fa is None or fb is None:
                found.append(f"{a} -> {b}: a room docs/ARCHITECTURE.md does not place")
            elif fa < fb:
                found.append(f"{a} (floor {fa}) -> {b} (floor {fb}): {sorted(why)[0]}")
    return found


def test_no_room_imports_a_floor_above_it(tree_copy: Path) -> None:
    assert upward_imports(REPO) == []
    path = tree_copy / "shared_lib" / "policy" / "guardian.py"
    path.write_text(path.read_text(encoding="utf-8") + "\nimport shared_lib.layers.base\n", encoding="utf-8")
    assert any(v.startswith("policy (floor 3) -> layers (floor 6)") for v in upward_imports(tree_copy))


def test_a_type_only_import_that_closes_a_cycle_is_caught(tree_copy: Path) -> None:
    # GIVEN the copy: the runtime sits below the layers
    assert package_cycles(tree_copy) == []
    # WHEN a low module imports the runtime, even for type checking only
    path = tree_copy / "shared_lib" / "tools" / "registry.py"
    path.write_text(
        path.read_text(encoding="utf-8")
        + "\nfrom typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from shared_lib.runtime import Runtime\n",
        encoding="utf-8",
    )
    # THEN the cycle runtime -> tools -> runtime is reported
    assert any({"runtime", "tools"} <= set(c) for c in package_cycles(tree_copy))


def test_shared_lib_never_imports_infra(tree_copy: Path) -> None:
    assert infra_imports(REPO) == []
    path = tree_copy / "shared_lib" / "cli" / "__init__.py"
    path.write_text(path.read_text(encoding="utf-8") + '\nDEV = "infra.demo_cli"\n', encoding="utf-8")
    assert infra_imports(tree_copy) == ["shared_lib/cli/__init__.py"]


def test_the_runtime_type_imports_no_layer_adapter_or_composition() -> None:
    assert runtime_imports(REPO) == set()
    assert module_name(REPO / "shared_lib" / "runtime.py") == "shared_lib.runtime"


def test_only_the_settings_model_and_the_composition_root_read_the_environment(tree_copy: Path) -> None:
    assert environment_reads(REPO) == []
    # a deliberate read elsewhere is caught, in either form
    path = tree_copy / "shared_lib" / "persona" / "catalogue.py"
    path.write_text(
        path.read_text(encoding="utf-8") + "\nimport os\n\nPERSONA = os.environ.get('CHARTER_PERSONA')\n",
        encoding="utf-8",
    )
    entry = tree_copy / "functions" / "brain.py"
    entry.write_text(entry.read_text(encoding="utf-8") + "\nfrom os import getenv\n", encoding="utf-8")
    found = environment_reads(tree_copy)
    assert any(f.startswith("shared_lib/persona/catalogue.py:") for f in found), found
    assert any(f.startswith("functions/brain.py:") for f in found), found


def test_no_product_module_is_over_400_lines() -> None:
    assert long_modules(REPO) == []


# The modules that stand loose at the top of ``shared_lib`` (docs/ARCHITECTURE.md): everything
# else lives in a package that names what it holds.
LOOSE_AT_MOST = 8


def loose_modules(repo: Path) -> list[str]:
    return sorted(p.name for p in (repo / "shared_lib").glob("*.py") if p.name != "__init__.py")


def test_the_top_of_shared_lib_holds_only_a_handful_of_loose_modules(tree_copy: Path) -> None:
    assert len(loose_modules(REPO)) <= LOOSE_AT_MOST, loose_modules(REPO)
    # a new module dropped at the top is counted
    for i in range(LOOSE_AT_MOST + 1 - len(loose_modules(REPO))):
        (tree_copy / "shared_lib" / f"odd_{i}.py").write_text('"""odd"""\n', encoding="utf-8")
    assert len(loose_modules(tree_copy)) > LOOSE_AT_MOST
