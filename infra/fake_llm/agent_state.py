"""The scripted model's ``state_update`` (seed 004 §5, §7): what a careful model would propose
for the conversation's agent state alongside its proposal.

* a tool call: the goal from the request, why now, a short plan, the step ``EXECUTION``, and
  the decision taken (a confirmed one's decision waits for the answer);
* a clarification: the question as the open question, the step ``PLANNING``;
* a later step of a multi-step turn: ``REVIEW`` of what the steps found (the charter takes at
  most one transition per utterance, so this one is usually refused and recorded);
* small talk and greetings: nothing (the conversation's goal does not change).
"""

from __future__ import annotations

from infra.fake_llm.scenario import JSON

GOAL_CHARS = 60


def _line(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def state_update(text: str, proposal: JSON, *, later: bool = False) -> JSON | None:
    """The update for ``proposal`` (the answer to the user's ``text``), or ``None``."""
    kind = proposal.get("output_type")
    if later:
        return {"step": "REVIEW", "plan_brief": ["前のステップの結果を確かめる", "結果を伝える"]}
    if kind == "clarification_needed":
        question = str(proposal.get("clarification_question") or "")
        return {
            "goal": f"「{_line(text, GOAL_CHARS)}」に応える",
            "open_questions": [_line(question, 100)],
            "step": "PLANNING",
            "status": "REQUIRES_USER_INPUT",
        }
    if kind != "tool_call":
        return None
    confirm = bool(proposal.get("needs_confirmation"))
    return {
        "goal": f"「{_line(text, GOAL_CHARS)}」を片付ける",
        "why_now": "ユーザーが今この操作を依頼したため",
        "plan_brief": ["依頼の内容と対象を確かめる", "操作を提案する", "結果を伝える"],
        "step": "EXECUTION",
        **({} if confirm else {"decision": _line(f"「{text}」の依頼を引き受ける", 100)}),
    }


def with_state_update(text: str, proposal: JSON, *, later: bool = False) -> JSON:
    update = state_update(text, proposal, later=later)
    return {**proposal, "state_update": update} if update is not None else proposal
