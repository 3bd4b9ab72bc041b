"""The features' registry (``shared_lib.wiring.features``): what the manifests declare is what the
CLI and the admin app offer, and two features never claim the same thing."""

from __future__ import annotations

import pytest
from admin_fakes import client

from shared_lib.cli import build_parser
from shared_lib.errors import ConfigError
from shared_lib.features.manifest import Manifest
from shared_lib.wiring.features import FEATURES, check, steps, tool_bindings


def _commands() -> set[str]:
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    return set(sub.choices)


def test_every_feature_command_is_offered_by_charter() -> None:
    # GIVEN the registered manifests WHEN the parser is built THEN each room's commands are there
    commands = _commands()
    assert {"approvals", "jobs", "episodes", "tags", "persona", "ft"} <= commands
    # and the core's are still there beside them
    assert {"policy", "turns", "data", "memory", "skills"} <= commands


def test_a_feature_removed_from_the_registry_takes_its_command_with_it(monkeypatch) -> None:
    import shared_lib.cli as cli

    # GIVEN the registry without the delegated jobs
    monkeypatch.setattr(cli, "FEATURES", tuple(f for f in FEATURES if f.name != "jobs"))
    # WHEN the parser is built THEN ``charter jobs`` is gone and the rest stays
    commands = _commands()
    assert "jobs" not in commands and "approvals" in commands


def test_the_dashboard_serves_each_features_routes(rt) -> None:
    # GIVEN the admin app over a runtime WHEN its routes are listed
    rules = {r.rule for r in client(rt).application.url_map.iter_rules()}
    # THEN the jobs', auto-approve's and fine-tuning's routes come from their rooms
    assert {
        "/api/jobs",
        "/api/jobs/<job_id>/cancel",
        "/tasks/jobs/watchdog",
        "/api/approvals/auto_off",
    } <= rules
    assert any(r.startswith("/api/ft") for r in rules)


def test_the_watchdog_task_answers_as_a_task(rt) -> None:
    # GIVEN no job at all WHEN the scheduler's watchdog runs on a local stack
    r = client(rt).post("/tasks/jobs/watchdog")
    # THEN it answers with the task's name and the sweep's result
    assert r.status_code == 200, r.get_data(as_text=True)
    assert r.get_json()["task"] == "jobs/watchdog"


def test_two_features_claiming_one_collection_are_refused() -> None:
    # GIVEN a new feature that also claims the approval jobs' documents
    rogue = Manifest(name="approvals_v2", summary="承認フロー v2（試作）", collections=("approval_jobs",))
    # WHEN the registry is checked THEN the second claim is named
    with pytest.raises(ConfigError, match="collection approval_jobs declared twice"):
        check((*FEATURES, rogue))
    with pytest.raises(ConfigError, match="feature jobs declared twice"):
        check((*FEATURES, Manifest(name="jobs", summary="dup")))


def test_a_manifest_names_only_its_own_rooms_entry_modules() -> None:
    # a command module of another room, or of the CLI package, is refused
    with pytest.raises(ConfigError, match="cli must name its room's cli module"):
        Manifest(name="reminders", summary="リマインド", cli="shared_lib.features.jobs.cli")
    with pytest.raises(ConfigError, match="admin must name its room's admin module"):
        Manifest(name="reminders", summary="リマインド", admin="shared_lib.admin.api")
    with pytest.raises(ConfigError, match="its name is its room's package name"):
        Manifest(name="auto-approve", summary="ハイフンは不可")
    assert Manifest(name="reminders", summary="ok", cli="shared_lib.features.reminders.cli_admin").cli


def test_no_feature_contributes_steps_or_tools_yet() -> None:
    # the stage table and the tools' move come later: the registry answers, empty
    assert steps() == ()
    assert dict(tool_bindings()) == {}
