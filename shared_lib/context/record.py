"""Recording a built context on the turn (``turn.context``), summarised.

What the model saw is what is recorded: the items the budget kept, clipped and capped
so the envelope stays small on the bus. Company values ride in ``teachings`` as an item
of ``kind = "company_values"`` until the envelope has a field of their own.

``render_recorded`` goes the other way for a turn that carries no rendering (an older
envelope, a unit test): its record, rendered by the same sections as the builder's.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from shared_lib.context.budget import estimate_tokens
from shared_lib.context.builder import BuiltContext
from shared_lib.context.render import build_sections, render
from shared_lib.context.sources import default_sources
from shared_lib.turn.envelope import ContextSection, UserInfo

CAPS = {
    "recent_messages": 10,
    "persons": 30,
    "tasks": 10,
    "goals": 5,
    "teachings": 5,
    "preferences": 10,
    "knowledge": 5,
    "episodes": 3,
}


# what the record and the brain's state keep of each waiting action (seed 002 §6: several jobs)
PENDING_FIELDS = ("approval_id", "user_id", "summary", "reminded")


def _clip(text: Any, n: int) -> str:
    value = str(text or "")
    return value if len(value) <= n else value[: n - 1] + "…"


def kept(built: BuiltContext, name: str) -> list[Any]:
    """The items of source ``name`` that survived the budget, in the order they were shown."""
    items = built.values.get(name) or []
    section = next((s for s in built.fitted.sections if s.name == name), None)
    n = len(section.lines) if section else 0
    if not isinstance(items, list) or n == 0:
        return []
    return items[-n:] if section is not None and section.oldest_first else items[:n]


def _shown(built: BuiltContext, name: str) -> bool:
    return any(s.name == name and s.lines for s in built.fitted.sections)


def record(section: ContextSection, built: BuiltContext, *, user_id: str, user_name: str | None) -> None:
    v = built.values
    user = v.get("user")
    section.user = UserInfo(**user) if user else UserInfo(user_id=user_id, name=user_name)
    session = dict(v.get("session") or {})
    section.pending_action = session.pop("pending_action", None)
    # every waiting job by its id and one-line summary (the latest in full is pending_action)
    listed = session.pop("pending_actions", None) or []
    if isinstance(listed, list) and listed:
        session["pending_actions"] = [
            {k: a.get(k) for k in PENDING_FIELDS} for a in listed if isinstance(a, dict)
        ]
    section.session = session
    section.recent_messages = [
        {"role": m.get("role"), "text": _clip(m.get("text"), 200)} for m in kept(built, "recent_messages")
    ][-CAPS["recent_messages"] :]
    section.summary = _clip(v.get("summary"), 500) if _shown(built, "summary") else ""
    named = v.get("departments") or {}
    section.persons = []
    for p in kept(built, "persons")[: CAPS["persons"]]:
        person = {"name": p["name"], "department_id": p.get("department_id")}
        if department := named.get(p.get("department_id") or ""):
            person["department"] = department
        section.persons.append(person)
    section.tasks = [{**t, "body": _clip(t.get("body"), 120)} for t in kept(built, "tasks")[: CAPS["tasks"]]]
    section.goals = kept(built, "goals")[: CAPS["goals"]]
    teachings = [
        {"content": _clip(t.get("content"), 200), "priority": t.get("priority")}
        for t in kept(built, "teachings")[: CAPS["teachings"]]
    ]
    if _shown(built, "company_values"):
        teachings.append({"kind": "company_values", "content": _clip(v.get("company_values"), 300)})
    section.teachings = teachings
    section.preferences = {
        str(p.get("subject") or f"item{i}"): _clip(p.get("content"), 200)
        for i, p in enumerate(kept(built, "preferences")[: CAPS["preferences"]], 1)
    }
    section.knowledge = [
        {
            "knowledge_id": k.get("knowledge_id"),
            "title": _clip(k.get("title"), 80),
            "snippet": _clip(k.get("snippet"), 200),
            "score": k.get("score"),
        }
        for k in kept(built, "knowledge")[: CAPS["knowledge"]]
    ]
    section.episodes = [
        {
            **({"fact_id": e["fact_id"]} if e.get("fact_id") else {"episode_id": e.get("episode_id")}),
            "when": e.get("when"),
            "content": _clip(e.get("content"), 240),
        }
        for e in kept(built, "episodes")[: CAPS["episodes"]]
    ]
    section.degraded = list(built.degraded)
    section.rendered = built.rendered
    section.token_estimate = built.fitted.tokens


def render_recorded(section: ContextSection, *, now: datetime, user_id: str, user_name: str | None) -> str:
    """The recorded context rendered as the builder renders it (no budget: the record is capped)."""
    values = {
        "session": {**section.session, "pending_action": section.pending_action},
        "user": section.user.model_dump() if section.user else None,
        "teachings": [t for t in section.teachings if t.get("kind") != "company_values"],
        "company_values": next(
            (t.get("content") for t in section.teachings if t.get("kind") == "company_values"), ""
        ),
        "persons": section.persons,
        # the department names the recorded people carried (the speaker's, when a colleague is listed)
        "departments": {
            str(p["department_id"]): str(p["department"])
            for p in section.persons
            if p.get("department_id") and p.get("department")
        },
        "tasks": section.tasks,
        "goals": section.goals,
        "recent_messages": section.recent_messages,
        "summary": section.summary,
        "preferences": [{"subject": k, "content": v} for k, v in section.preferences.items()],
        "knowledge": section.knowledge,
        "episodes": section.episodes,
    }
    sections = build_sections(
        values,
        {s.name: s.truth for s in default_sources()},
        now=now,
        degraded=list(section.degraded),
        fallback_user={"user_id": user_id, "name": user_name},
    )
    return render(sections)


def summary_line(built: BuiltContext) -> str:
    """One line for the trail: source states, what the budget dropped, tokens."""
    states = ",".join(f"{r.name}:{r.status}" for r in built.records.values() if r.status != "ok")
    dropped = ",".join(f"{k}:{n}" for k, n in built.fitted.dropped.items())
    over = " over_budget" if built.fitted.over_budget else ""
    return f"sources={states or 'all_ok'} dropped={dropped or '-'} tokens={built.fitted.tokens}{over}"


def window_tokens(built: BuiltContext, limit: int) -> int | None:
    """The tokens of the conversation's summary and of every message in its window, measured as
    compaction measures them (``context.compaction.usage_of``), from what the sources read: the
    summary and the recent messages, both read after one read of the conversation's document.
    ``None`` when the recent read returned its whole ``limit`` (older messages may still be in
    the window) or either source did not answer: the memory stage then reads for itself."""
    if any(
        built.records.get(n) is None or built.records[n].status != "ok"
        for n in ("recent_messages", "summary")
    ):
        return None
    raw = built.values.get("recent_messages")
    if not isinstance(raw, list) or len(raw) >= limit:
        return None
    texts = [str(built.values.get("summary") or ""), *(str(m.get("text") or "") for m in raw)]
    return sum(estimate_tokens(t) for t in texts)
