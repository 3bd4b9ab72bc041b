"""The features' registry (``shared_lib.wiring.features``): what the manifests declare is what the
CLI and the admin app offer, and two features never claim the same thing."""

from __future__ import annotations

import pytest
from admin_fakes import client

from shared_lib.cli import build_parser
from shared_lib.errors import ConfigError
from shared_lib.features.debounce.steps_ingress import BUFFER
from shared_lib.features.heartbeat_tasks import handlers as heartbeat_handlers
from shared_lib.features.jobs import handlers as jobs_handlers
from shared_lib.features.manifest import Manifest
from shared_lib.features.skills import handlers as skills_handlers
from shared_lib.layers import memory
from shared_lib.runtime import Hooks
from shared_lib.tools.builtin import builtin_registry
from shared_lib.tools.catalog import Binding, read_catalogue
from shared_lib.tools.handlers.tasks import TaskCreateParams, task_create
from shared_lib.wiring.features import (
    FEATURES,
    check,
    hooks,
    memory_jobs,
    steps,
    tool_bindings,
    tool_registry,
)
from shared_lib.wiring.stages import DECLARED


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


def test_the_features_steps_are_the_ones_the_stage_table_places() -> None:
    # GIVEN every feature's declared steps; THEN the stage table places exactly those, by name
    declared = steps()
    assert {s.name for s in declared} == set(DECLARED) and len(declared) == len(DECLARED)
    assert {"approvals.ask", "jobs.report", "debounce.gather", "finetune.stage"} <= set(DECLARED)


def test_the_features_tools_complete_the_catalogue_in_the_products_registry() -> None:
    # GIVEN the catalogue of config/tools.json
    names = {e.name for e in read_catalogue().tools}
    # WHEN the composition root binds it to the built-ins and the features' handlers
    registry = tool_registry()
    # THEN every entry is a tool, delegation and skill proposals bound by their rooms
    assert {s.name for s in registry} == names
    assert registry.get("delegate_task").handler is jobs_handlers.delegate_task
    assert registry.get("propose_skill").handler is skills_handlers.propose_skill
    assert registry.get("schedule_heartbeat_task").handler is heartbeat_handlers.schedule_heartbeat_task
    features_tools = {"delegate_task", "propose_skill", "schedule_heartbeat_task"}
    assert features_tools <= set(tool_bindings())
    # and the built-ins alone leave exactly the features' tools out
    assert names - {s.name for s in builtin_registry()} == features_tools


def test_a_feature_removed_from_the_registry_leaves_its_catalogue_entry_unbound() -> None:
    # GIVEN the features without the delegated jobs, whose entry config/tools.json still lists
    without = tuple(f for f in FEATURES if f.name != "jobs")
    # WHEN the product's registry is built THEN the unbound entry is named, not silently dropped
    with pytest.raises(ConfigError, match="delegate_task"):
        tool_registry(without)


def test_a_feature_binding_a_built_in_tools_handler_is_refused() -> None:
    # GIVEN a room that binds the handler of 「タスク作成」 again
    rogue = Manifest(
        name="tasks_v2",
        summary="ChatWorkタスクの作り直し（試作）",
        tools={"chatwork_task_create": Binding(TaskCreateParams, task_create)},
    )
    # WHEN the registry is checked THEN the second claim is named
    with pytest.raises(ConfigError, match="tool handler chatwork_task_create declared twice"):
        tool_bindings((*FEATURES, rogue))


def test_the_runtime_holds_what_the_rooms_lend(rt) -> None:
    # GIVEN the runtime the composition root built WHEN its hooks and memory jobs are read
    # THEN the debounce, the persona's extension, Best-of-N and the skills are lent by their rooms
    lent = hooks()
    assert rt.hooks == lent
    assert None not in (lent.inbound_buffer, lent.persona_ext, lent.phrasing, lent.org_tools)
    # and the memory stories' scheduled jobs run beside the memory target's own compaction
    assert {"daily_digest", "tagging"} <= set(rt.memory_jobs) and "compact" not in rt.memory_jobs
    assert set(memory.jobs(rt)) == {"compact", "daily_digest", "tagging"}


def test_two_features_lending_one_hook_are_refused() -> None:
    # GIVEN a second room that also buffers a burst of messages
    second = Manifest(name="debounce_v2", summary="連投まとめ v2", hooks=Hooks(inbound_buffer=BUFFER))
    # WHEN the hooks are gathered THEN the second loan is refused, naming the hook
    with pytest.raises(ConfigError, match="debounce_v2: hook inbound_buffer"):
        hooks((*FEATURES, second))


def test_two_features_scheduling_one_memory_job_are_refused() -> None:
    rogue = Manifest(
        name="digest_v2", summary="日報まとめ（試作）", jobs={"daily_digest": lambda rt, job: {}}
    )
    with pytest.raises(ConfigError, match="memory job daily_digest declared twice"):
        memory_jobs((*FEATURES, rogue))
