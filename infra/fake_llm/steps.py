"""Multi-step scenarios of the scripted model (issue 16): look first, then act.

A first step the table recognises (``FIRST_STEP_RULES``) searches with ``loop.needs_next_loop``;
a later step reads the charter's ``tool_result`` for its ``submit_proposal`` call (the last user
message) and the request (the first user message), and proposes what a careful model would:

* 「自分のタスクを確認して、資料のタスクは完了にして」 → search, then complete the one task whose
  text contains 「資料」; 「…は削除して」 → search, then delete it (which the charter confirms);
* nothing matches → ask (``clarification_needed``, the tasks found as options);
* 「タスクを確認し続けて」 → search again and again (the controller stops it at ``max_loops``);
* a verdict that did not let the step run, or anything else → a short text that tells what
  the steps found.

Two more behaviours of a real model the loop must survive (issue 37):

* 「タスクを確認して、どれから片付けるか相談したい」 (a check and どれから / 優先) → the search,
  saying no next step is needed while asking the user which comes first
  (``questions_for_user``): the question must reach the user;
* the fault-injection marker ``[[fit:ROUTE]]`` in the user's words → the model's proposal
  says its route does not fit and suggests ``ROUTE`` (``fit`` false, ``suggested_route``), as a
  model that misreads 「タスクを見せて」 as code would: the charter decides whether to re-route.
"""

from __future__ import annotations

import json
import re
from typing import Any

from infra.fake_llm.scenario import JSON, MessagesRequest

_TARGET = re.compile(r"[、,]\s*(?:「([^」]+)」|([^、,「」]+?))の?タスクは?(?:を)?(完了|削除)")
_CHECK = ("確認", "見て", "チェック")
_KEEP_GOING = ("確認し続けて", "調べ続けて")  # the second: a delegated job's (infra.fake_llm.jobs)
_ASK_FIRST = ("どれから", "優先")
_FIT = re.compile(r"\[\[fit:([A-Za-z]+)\]\]")
ASK_WHICH_FIRST = "期限が近いものから片付けるのでいいウル？ほかに急ぎのものがあれば教えてほしいウル🐺"
_REASONING = "検索結果を見てから、どのタスクに次の操作をするかを決めるため、まず検索だけを提案する"


def is_first_step(text: str) -> bool:
    """A request that needs a look before the act (the rule table calls this)."""
    if "タスク" not in text:
        return False
    return any(k in text for k in _KEEP_GOING) or (
        any(w in text for w in _CHECK) and _TARGET.search(text) is not None
    )


def is_check_then_ask(text: str) -> bool:
    """A check of one's tasks with a question of order for the user (「どれから」「優先」)."""
    return "タスク" in text and any(w in text for w in _CHECK) and any(w in text for w in _ASK_FIRST)


def check_then_ask(text: str, search: JSON) -> JSON:
    """The search, finished in one step, with the question of order for the user."""
    loop = {
        "needs_next_loop": False,
        "why": "どれから片付けるかは本人が決めることなので、検索結果を見せて聞く",
        "questions_for_user": [ASK_WHICH_FIRST],
        "risk": "low",
    }
    return {**search, "loop": loop}


def with_route_doubt(text: str, proposal: JSON) -> JSON:
    """The proposal saying its route does not fit, when the words carry ``[[fit:ROUTE]]``."""
    found = _FIT.search(text)
    if found is None:
        return proposal
    loop = {**(proposal.get("loop") or {}), "fit": False, "suggested_route": found.group(1).upper()}
    loop.setdefault("needs_next_loop", False)
    return {**proposal, "loop": loop, "confidence": {**proposal.get("confidence", {}), "overall": 0.95}}


def first_step(text: str, search: JSON) -> JSON:
    """The search proposal of the table (``search``), handed over for a next step."""
    why = "検索結果から、完了や削除の対象になるタスクを選ぶため"
    loop = {"needs_next_loop": True, "why": why, "next_actions": ["対象のタスクを選ぶ"], "risk": "low"}
    reasoning = {**search["reasoning"], "tool_selection_reason": _REASONING}
    return {**search, "reasoning": reasoning, "loop": loop}


def is_later_step(request: MessagesRequest) -> bool:
    last = request.messages[-1] if request.messages else {}
    content = last.get("content")
    return (
        last.get("role") == "user"
        and isinstance(content, list)
        and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    )


def _request_text(request: MessagesRequest) -> str:
    content = request.messages[0].get("content", "")
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return str(content)


def _last_outcome(request: MessagesRequest) -> dict[str, Any]:
    for block in request.messages[-1].get("content", []):
        if isinstance(block, dict) and block.get("type") == "tool_result":
            raw = block.get("content")
            text = raw if isinstance(raw, str) else "".join(str(b.get("text", "")) for b in raw or [])
            try:
                found = json.loads(text)
            except ValueError:
                return {}
            return found if isinstance(found, dict) else {}
    return {}


def _proposal(kind: str, body: JSON, why: str, confidence: float) -> JSON:
    reasoning: JSON
    if kind == "tool_call":
        reasoning = {
            "intent_understanding": "前のステップの検索結果に、依頼されたタスクが見つかった",
            "context_used": ["前のステップの tool_result（タスク検索の結果）"],
            "tool_selection_reason": why,
            "alternatives_considered": ["もう一度検索するのは、対象がすでに特定できているので不要"],
        }
    elif kind == "clarification_needed":
        reasoning = {
            "ambiguity_detected": why,
            "possible_interpretations": ["別の言葉で探す", "一覧から選ぶ"],
        }
    else:
        reasoning = {
            "intent_understanding": "前のステップの結果で依頼に答えられる",
            "response_strategy": why,
            "no_tool_reason": "必要な操作は前のステップまでで済んでいるため",
        }
    return {"output_type": kind, "reasoning": reasoning, "confidence": {"overall": confidence}, **body}


def next_step(request: MessagesRequest) -> JSON:
    """The proposal of a later step, from the request and the last step's outcome."""
    text, outcome = _request_text(request), _last_outcome(request)
    results = outcome.get("results") or []
    first = results[0] if results and isinstance(results[0], dict) else {}
    result = first.get("result") if isinstance(first.get("result"), dict) else {}
    tasks = [t for t in result.get("tasks") or [] if isinstance(t, dict)]
    if outcome.get("verdict") not in ("allow", "modify") or not first.get("ok"):
        return _proposal(
            "text_response", {"text_response": "ここで止めておくウル🐺"}, "判定に従って止める", 0.9
        )
    if any(k in text for k in _KEEP_GOING):
        again = {
            "tool_calls": [{"tool_name": "chatwork_task_search", "parameters": {"assignee_name": "自分"}}],
            "loop": {"needs_next_loop": True, "why": "続けて確認するよう頼まれたため", "risk": "low"},
        }
        return _proposal(
            "tool_call", again, "続けて確認するよう頼まれたので、もう一度タスク検索を提案する", 0.9
        )
    target = _TARGET.search(text)
    if first.get("tool") != "chatwork_task_search" or target is None:
        done = {"text_response": f"{len(tasks)}件のタスクを確認したウル🐺"}
        return _proposal("text_response", done, "検索した件数を伝えて終える", 0.9)
    word, act = (target.group(1) or target.group(2) or "").strip(), target.group(3)
    match = next((t for t in tasks if word and word in str(t.get("body", ""))), None)
    if match is None:
        options = [str(t.get("body", ""))[:40] for t in tasks[:3]]
        ask = {
            "clarification_question": f"「{word}」に当てはまるタスクは見つからなかったウル。どのタスクのことか教えてほしいウル🐺",
            "options": options,
        }
        return _proposal("clarification_needed", ask, f"「{word}」に当てはまるタスクが検索結果にない", 0.5)
    tool = "chatwork_task_complete" if act == "完了" else "delete_task"
    params = {"task_query": str(match.get("body", ""))[:200], "task_id": str(match.get("task_id", ""))}
    call = {
        "tool_calls": [
            {
                "tool_name": tool,
                "parameters": params,
                "parameter_sources": {"task_query": "context", "task_id": "context"},
            }
        ],
        "loop": {"needs_next_loop": False, "why": "依頼された操作はこれで最後", "risk": "low"},
    }
    why = f"検索結果で「{word}」のタスクを特定できたので、{act}の操作を提案する"
    return _proposal("tool_call", call, why, 0.9)
