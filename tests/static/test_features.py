"""The feature rooms (``shared_lib/features/<name>/``, docs/ARCHITECTURE.md "A feature"), checked
on the source:

* every module of a room stands on the floor of its role, and the floor and cycle rules see the
  roles of one room apart (a room's state importing its own steps is caught, both ways);
* a layer, the CLI and the admin app reach a feature only through the registry
  (``shared_lib.wiring.features``), except the direct calls the stage table has yet to take
  over, named one by one below;
* every room has a manifest the composition root registers, and what a manifest names exists:
  its entry modules, their entry functions, the collections its room owns.

Each rule is also shown to catch a deliberate violation in a copy of the tree.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from import_graph import REPO, existing_modules, imports_of, module_name, package_graph
from test_architecture import ROLE_FLOORS, package_cycles, upward_imports

from shared_lib.collections import load_catalogue
from shared_lib.wiring.features import FEATURES

# The direct calls of a layer into a feature that the stage table (``shared_lib.wiring.stages``) or
# the runtime's hooks (``shared_lib.runtime.Hooks``, lent by the manifests) have yet to replace:
# none left. An entry that no longer occurs fails the test, so this list only shrinks.
PENDING_STAGE_TABLE: frozenset[tuple[str, str]] = frozenset()
THROUGH_THE_REGISTRY = ("layers", "cli", "admin")


@pytest.fixture
def lib_copy(tmp_path: Path) -> Path:
    shutil.copytree(
        REPO / "shared_lib", tmp_path / "shared_lib", ignore=shutil.ignore_patterns("__pycache__")
    )
    return tmp_path


def rooms(repo: Path) -> list[Path]:
    return sorted(p for p in (repo / "shared_lib" / "features").iterdir() if (p / "__init__.py").is_file())


def unplaced_modules(repo: Path) -> list[str]:
    """Modules of a room whose role the floors do not name: a module's role is the first name
    under its room, up to its first ``_`` (``steps_x.py`` and ``state/export.py`` have one)."""
    return [
        str(p.relative_to(repo))
        for room in rooms(repo)
        for p in sorted(room.rglob("*.py"))
        if p != room / "__init__.py"
        and p.relative_to(room).with_suffix("").parts[0].partition("_")[0] not in ROLE_FLOORS
    ]


def feature_imports(repo: Path, pending: frozenset[tuple[str, str]] = PENDING_STAGE_TABLE) -> list[str]:
    """``importer -> feature module`` for every import of a room by a layer, the CLI or the admin
    app that is not a pending stage-table call, and every pending entry that no longer occurs."""
    known = existing_modules(repo)
    # a room's ``__init__`` is its docstring: importing ``features.jobs.steps`` names it too
    inits = {module_name(p, repo) for p in (repo / "shared_lib" / "features").rglob("__init__.py")}
    seen: set[tuple[str, str]] = set()
    for floor in THROUGH_THE_REGISTRY:
        for path in sorted((repo / "shared_lib" / floor).rglob("*.py")):
            src = module_name(path, repo)
            for name in imports_of(path, repo):
                while name not in known and "." in name:  # ``from m import f``: the module ``m``
                    name = name.rpartition(".")[0]
                if name.startswith("shared_lib.features.") and name not in inits:
                    seen.add((src, name))
    found = [f"{a} -> {b}" for a, b in sorted(seen - pending)]
    found += [
        f"{a} -> {b}: no longer imported, drop it from PENDING_STAGE_TABLE" for a, b in sorted(pending - seen)
    ]
    return found


def test_every_module_of_a_room_stands_on_the_floor_of_its_role(lib_copy: Path) -> None:
    # GIVEN the rooms as they are: every module is a state, store, handlers, steps, manifest, cli or admin
    assert rooms(REPO), "no feature room"
    assert unplaced_modules(REPO) == []
    # WHEN a module without a role is dropped into a room
    (lib_copy / "shared_lib" / "features" / "jobs" / "helpers.py").write_text('"""odd"""\n', encoding="utf-8")
    # THEN it is reported
    assert unplaced_modules(lib_copy) == ["shared_lib/features/jobs/helpers.py"]


def test_a_rooms_state_importing_its_own_steps_is_an_upward_import_and_a_cycle(lib_copy: Path) -> None:
    # GIVEN the copy: the jobs' steps (floor 6) import the jobs' state (floor 3), not the reverse
    graph = package_graph(lib_copy)
    assert "features.jobs.state" in graph["features.jobs.steps"]
    assert upward_imports(lib_copy) == [] and package_cycles(lib_copy) == []
    # WHEN the state imports the steps, inside a function (a deferred import still counts)
    path = lib_copy / "shared_lib" / "features" / "jobs" / "state.py"
    path.write_text(
        path.read_text(encoding="utf-8")
        + "\n\ndef _late() -> None:\n    from shared_lib.features.jobs import steps\n",
        encoding="utf-8",
    )
    # THEN both rules see it
    assert any(
        v.startswith("features.jobs.state (floor 3) -> features.jobs.steps (floor 6)")
        for v in upward_imports(lib_copy)
    )
    assert any({"features.jobs.state", "features.jobs.steps"} <= set(c) for c in package_cycles(lib_copy))


def test_a_rooms_steps_importing_a_layer_closes_a_cycle(lib_copy: Path) -> None:
    # GIVEN a layer that calls a room's step directly (as the layers did before the stage table)
    layer = lib_copy / "shared_lib" / "layers" / "responder.py"
    layer.write_text(
        layer.read_text(encoding="utf-8") + "\nimport shared_lib.features.approvals.steps\n", encoding="utf-8"
    )
    # WHEN that feature's step reaches into the layer
    path = lib_copy / "shared_lib" / "features" / "approvals" / "steps.py"
    path.write_text(
        path.read_text(encoding="utf-8") + "\nimport shared_lib.layers.responder\n", encoding="utf-8"
    )
    # THEN the cycle layers -> features.approvals.steps -> layers is reported
    assert any({"layers", "features.approvals.steps"} <= set(c) for c in package_cycles(lib_copy))


def test_layers_cli_and_admin_reach_features_only_through_the_registry(lib_copy: Path) -> None:
    assert feature_imports(REPO) == []
    # WHEN the CLI imports a room's command module itself, and a layer a room's store
    cli = lib_copy / "shared_lib" / "cli" / "__init__.py"
    cli.write_text(
        cli.read_text(encoding="utf-8") + "\nfrom shared_lib.features.jobs import cli as jobs\n",
        encoding="utf-8",
    )
    layer = lib_copy / "shared_lib" / "layers" / "observer.py"
    layer.write_text(
        layer.read_text(encoding="utf-8") + "\nfrom shared_lib.features.approvals.store import live\n",
        encoding="utf-8",
    )
    # THEN both are reported
    found = feature_imports(lib_copy)
    assert "shared_lib.cli -> shared_lib.features.jobs.cli" in found, found
    assert "shared_lib.layers.observer -> shared_lib.features.approvals.store" in found, found


def test_a_pending_stage_table_call_that_is_gone_must_leave_the_list(lib_copy: Path) -> None:
    # GIVEN a pending entry as the list held it, and the ingress importing the debounce's state
    pending = frozenset({("shared_lib.layers.ingress", "shared_lib.features.debounce.state")})
    path = lib_copy / "shared_lib" / "layers" / "ingress.py"
    text = path.read_text(encoding="utf-8")
    path.write_text(text + "\nfrom shared_lib.features.debounce import state as debounce\n", encoding="utf-8")
    assert feature_imports(lib_copy, pending) == []
    # WHEN the ingress stops importing it (its hook took over)
    path.write_text(text, encoding="utf-8")
    # THEN the stale entry is reported
    assert feature_imports(lib_copy, pending) == [
        "shared_lib.layers.ingress -> shared_lib.features.debounce.state: no longer imported, "
        "drop it from PENDING_STAGE_TABLE"
    ]


def test_every_room_is_registered_by_its_manifest() -> None:
    names = [f.name for f in FEATURES]
    assert sorted(names) == [room.name for room in rooms(REPO)]
    for room in rooms(REPO):
        assert (room / "manifest.py").is_file(), room.name


@pytest.mark.parametrize("feature", FEATURES, ids=lambda f: f.name)
def test_what_a_manifest_names_exists(feature) -> None:
    import importlib

    if feature.cli is not None:
        assert callable(importlib.import_module(feature.cli).register)
    if feature.admin is not None:
        assert callable(importlib.import_module(feature.admin).blueprints)
    owners = {c.name: c.owner for c in load_catalogue().collections}
    for name in feature.collections:
        # a collection the room declares is one of config/collections.json, owned by the room
        assert owners.get(name, "").startswith(f"shared_lib.features.{feature.name}."), (
            name,
            owners.get(name),
        )
