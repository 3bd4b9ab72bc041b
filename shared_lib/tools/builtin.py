"""The built-in tools: every handler bound by name, and the registry loaded from data.

Adding a tool (seed 000 §7.1b checklist, enforced by ``shared_lib.tools.checklist`` and
its test): write the parameter model and handler, bind them in ``HANDLERS``, add the
entry to ``config/tools.json`` with 3–5 trigger examples, a minimum level, a danger
class and an effect, then add its tests.
"""

from __future__ import annotations

from types import MappingProxyType

from shared_lib.tools.catalog import Binding, load_registry
from shared_lib.tools.handlers import goals, jobs, memory, org, salary, skills, tasks
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
        "announce": Binding(org.AnnounceParams, org.announce),
        "send_to_all": Binding(org.SendToAllParams, org.send_to_all),
        "view_all_users": Binding(org.ViewAllUsersParams, org.view_all_users),
        "change_permission": Binding(org.ChangePermissionParams, org.change_permission),
        "view_salary_info": Binding(salary.ViewSalaryInfoParams, salary.view_salary_info),
        "propose_skill": Binding(skills.ProposeSkillParams, skills.propose_skill),
        "delegate_task": Binding(jobs.DelegateTaskParams, jobs.delegate_task),
    }
)

__all__ = ["HANDLERS", "builtin_registry"]


def builtin_registry() -> ToolRegistry:
    return load_registry(HANDLERS)
