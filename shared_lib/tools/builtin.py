"""The built-in tools: every handler of ``tools/handlers/`` bound by name.

A feature room binds its own tools' handlers in its manifest (``Manifest.tools``: delegation in
``features/jobs``, skill proposals in ``features/skills``); the product's registry is the
composition root's (``shared_lib.wiring.features.tool_registry``: the catalogue bound to both).
``builtin_registry`` is the catalogue bound to the built-ins alone, an entry whose handler is a
feature's left out: what a module below the composition root builds for itself (its examples).

Adding a tool (seed 000 §7.1b checklist, enforced by ``shared_lib.tools.checklist`` and
its test): write the parameter model and handler, bind them in ``HANDLERS`` (or in its
feature's manifest), add the entry to ``config/tools.json`` with 3–5 trigger examples, a
minimum level, a danger class and an effect, then add its tests.
"""

from __future__ import annotations

from types import MappingProxyType

from shared_lib.tools.catalog import Binding, load_registry
from shared_lib.tools.handlers import goals, memory, org, salary, tasks
from shared_lib.tools.registry import ToolRegistry

HANDLERS = MappingProxyType(
    {
        "chatwork_task_create": Binding(tasks.TaskCreateParams, tasks.task_create),
        "chatwork_task_complete": Binding(tasks.TaskCompleteParams, tasks.task_complete),
        "chatwork_task_search": Binding(tasks.TaskSearchParams, tasks.task_search),
        "delete_task": Binding(tasks.DeleteTaskParams, tasks.delete_task),
        "view_team_tasks": Binding(tasks.ViewTeamTasksParams, tasks.view_team_tasks),
        "goal_registration": Binding(goals.GoalRegistrationParams, goals.goal_registration),
        "goal_progress_report": Binding(goals.GoalProgressParams, goals.goal_progress_report),
        "delete_goal": Binding(goals.DeleteGoalParams, goals.delete_goal),
        "view_team_goals": Binding(goals.ViewTeamGoalsParams, goals.view_team_goals),
        "save_memory": Binding(memory.SaveMemoryParams, memory.save_memory),
        "query_memory": Binding(memory.QueryMemoryParams, memory.query_memory),
        "delete_memory": Binding(memory.DeleteMemoryParams, memory.delete_memory),
        "knowledge_search": Binding(memory.KnowledgeSearchParams, memory.knowledge_search),
        "announce": Binding(org.AnnounceParams, org.announce, org.announce_precheck),
        "send_to_all": Binding(org.SendToAllParams, org.send_to_all),
        "view_all_users": Binding(org.ViewAllUsersParams, org.view_all_users),
        "change_permission": Binding(org.ChangePermissionParams, org.change_permission),
        "view_salary_info": Binding(salary.ViewSalaryInfoParams, salary.view_salary_info),
    }
)

__all__ = ["HANDLERS", "builtin_registry"]


def builtin_registry() -> ToolRegistry:
    """The catalogue's built-in tools (a feature's tool, bound by its manifest, is left out)."""
    return load_registry(HANDLERS, only_bound=True)
