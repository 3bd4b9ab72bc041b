"""Delegated jobs of the scripted model (issue 22): delegate, then the job's own steps.

A person's message that asks to collect and summarise (「営業チームの期限切れタスクを集めて要約して」),
to keep looking (「ずっと調べ続けて」), or to collect the staff list (「全社員の一覧を集めてまとめて」) is
delegated: ``delegate_task`` with the message as the task. The job's own turn carries the
product's marker 【任された仕事】 (``shared_lib.features.jobs.steps.JOB_MARKER``) before its task:

* a staff-list task proposes the staff list (level 5), a salary task the salary view (level 6):
  a member's job is denied;
* any other task searches the tasks and hands over for a next step; the next step answers with
  a summary (``steps.next_step``), or, for 「調べ続けて」, searches again until the watchdog stops it
  at the job's step limit.
"""

from __future__ import annotations

from infra.fake_llm.scenario import JSON

JOB_MARKER = "【任された仕事】"  # the product's marker of a job's turn (same text, not imported)
KEEP_LOOKING = "調べ続けて"
_DELEGATE_WORDS = (("集めて", "調べて", "調べ続けて"), ("要約", "まとめ", "調べ続けて"))


def _reasoning(intent: str, why: str) -> JSON:
    return {
        "intent_understanding": intent,
        "context_used": ["ユーザーの最新メッセージの文言"],
        "tool_selection_reason": why,
        "alternatives_considered": ["その場で全部を調べると時間がかかり、返事が遅くなる"],
    }


def _call(tool: str, params: JSON, reasoning: JSON, loop: JSON | None = None) -> JSON:
    out: JSON = {
        "output_type": "tool_call",
        "reasoning": reasoning,
        "confidence": {"overall": 0.9, "intent": 0.9, "parameters": 0.9},
        "tool_calls": [
            {
                "tool_name": tool,
                "parameters": params,
                "parameter_sources": dict.fromkeys(params, "user_message"),
            }
        ],
    }
    if loop is not None:
        out["loop"] = loop
    return out


def is_job_turn(text: str) -> bool:
    return text.startswith(JOB_MARKER)


def is_delegation(text: str) -> bool:
    return not is_job_turn(text) and all(any(w in text for w in group) for group in _DELEGATE_WORDS)


def delegate(text: str) -> JSON:
    return _call(
        "delegate_task",
        {"task": text.strip()[:500]},
        _reasoning(
            "時間のかかる調べ物とまとめの依頼だと理解した", "調べ物を別の作業として任せ、終わったら報告する"
        ),
    )


def job_step(text: str) -> JSON:
    """The first step of a job's turn."""
    if "全社員" in text:  # the staff list: level 5
        return _call(
            "view_all_users",
            {},
            _reasoning("全社員の一覧を集めてまとめる仕事だと理解した", "社員一覧のツールで集める"),
        )
    if "給与" in text:
        return _call(
            "view_salary_info",
            {"target_user_name": "全員"},
            _reasoning("給与を調べてまとめる仕事だと理解した", "給与情報を見るツールで調べる"),
        )
    loop = {"needs_next_loop": True, "why": "検索結果を見てまとめるため", "risk": "low"}
    return _call(
        "chatwork_task_search",
        {"assignee_name": "自分"},
        _reasoning("タスクを集めてまとめる仕事だと理解した", "まずタスクを検索して材料を集める"),
        loop,
    )
