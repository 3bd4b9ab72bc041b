"""Rendering the context for the LLM (seed 000 §6.1 ``to_prompt_string``) as sections.

Sections come in Truth order, highest first within each band: the state of the
conversation, who is speaking, the company's teachings and values, then what the
database says (people, tasks, goals), then conversation memory, then knowledge. Each
header names its source's Truth rank, so the model can prefer the higher one; a notice
names the sources that could not be read, so the model asks instead of guessing.

This is the one rendering of a context: the builder renders what its sources read, and a
turn recorded without a rendering is rendered from its record the same way
(``record.render_recorded``); the brain only frames it (``brain.context_prompt``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

from shared_lib.context.sources import TRUTH_LABELS
from shared_lib.dates import display_date, display_time
from shared_lib.settings import config_files
from shared_lib.tools.catalog import TOOLS_FILE, read_catalogue
from shared_lib.tools.display import show_plain
from shared_lib.tools.normalize import JST

CLIP = 200


@dataclass
class Section:
    name: str
    title: str
    lines: list[str] = field(default_factory=list)
    droppable: bool = True
    oldest_first: bool = False  # drop from the front (conversation history keeps the newest)
    shown: bool = True  # False: counted in the budget, shown by the prompt's agent-state block

    def text(self) -> str:
        return "\n".join([self.title, *self.lines]) if self.lines else ""


def _clip(value: Any, n: int = CLIP) -> str:
    text = " ".join(str(value or "").split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _title(label: str, truth: int | None) -> str:
    return f"【{label}】" + (f"（出典: {TRUTH_LABELS[truth]}）" if truth else "")


# what the model reads of a goal's state, as the persona says it (a task's is the tools' own
# ``value_display``: ``tool_words``)
GOAL_STATUS = {"active": "進行中", "draft": "設定中", "done": "達成"}
# the conversation's state (``state.session``) and the last answer's kind (its output type)
SESSION_MODES = {
    "normal": "通常",
    "confirmation_pending": "確認待ち",
    "error_recovery": "エラーからの立て直し中",
    "multi_step_flow": "複数の手順の途中",
}
LAST_INTENTS = {
    "text_response": "返答した",
    "tool_call": "操作を提案した",
    "clarification_needed": "聞き返した",
}
# a source that could not be read, named as its section is titled
SOURCE_LABELS = {
    "session": "現在のセッション",
    "user": "ユーザー情報",
    "teachings": "CEO教え",
    "company_values": "会社の価値観",
    "persons": "社内の人物",
    "departments": "部署名",
    "tasks": "関連タスク",
    "goals": "アクティブな目標",
    "recent_messages": "直近の会話",
    "summary": "会話の要約",
    "preferences": "ユーザーの嗜好",
    "episodes": "思い出した出来事",
    "knowledge": "関連する会社知識",
    "agent_state": "作業の状態",
    "persona_ext": "学んだ好み",
}


@dataclass(frozen=True)
class ToolWords:
    """What the tool catalogue says a user reads: each tool's name (「チームのタスクの確認」) and a
    task's status (「未完了」), the words the replies use too."""

    names: dict[str, str]
    task_status: dict[str, str]

    def tool(self, name: str) -> str:
        """「チームのタスクの確認〔view_team_tasks〕」: the name people read beside the one the model
        calls; the name alone for a tool the catalogue does not have (an organisation's skill)."""
        shown = self.names.get(name)
        return f"{shown}〔{name}〕" if shown else name


def tool_words() -> ToolWords:
    """The words of the catalogue in use (``CHARTER_TOOLS_FILE`` or the packaged one)."""
    return _tool_words(config_files.current().tools or TOOLS_FILE)


@functools.lru_cache(maxsize=4)
def _tool_words(path: Path) -> ToolWords:
    """Read once per file: a task status is what the tools that take one show for it (the
    first tool's word for a value wins; ``tests/unit/context`` holds them to agree)."""
    entries = read_catalogue(path).tools
    status: dict[str, str] = {}
    for entry in entries:
        for value, word in entry.value_display.get("status", {}).items():
            status.setdefault(value, word)
    return ToolWords({e.name: e.display_name for e in entries}, status)


def _day(value: Any, today: date, missing: str) -> str:
    """A deadline as the persona says it (「1月10日（金）」, the year when it is not this year's),
    so the model never reads, and repeats, an ISO date; what is not a date is shown as it is."""
    if value is None or value == "":
        return missing
    return show_plain(value, today=today)


def _department(department_id: Any, names: dict[str, str]) -> str | None:
    """「営業部〔d-sales〕」: the name people say and the id the team views take; the id alone
    when the directory names no such department."""
    if not department_id:
        return None
    name = names.get(str(department_id))
    return f"{name}〔{department_id}〕" if name else str(department_id)


def _when(value: Any) -> str:
    """An episode's time as people read it: 「11月25日（水）15時30分」 (JST)."""
    try:
        at = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    except ValueError:
        return "いつか不明"
    at = at.astimezone(JST) if at.tzinfo else at
    return display_date(at.date()) + display_time(at.time())


def _session_lines(session: dict[str, Any], pending: dict[str, Any] | None) -> list[str]:
    mode = str(session.get("mode") or "normal")
    lines = [f"セッションモード: {SESSION_MODES.get(mode, mode)}"]
    if session.get("last_intent"):
        intent = str(session["last_intent"])
        lines.append(f"直前の応答: {LAST_INTENTS.get(intent, _clip(intent, 80))}")
    if session.get("last_tool_called"):
        lines.append(f"直前の操作: {_clip(tool_words().tool(str(session['last_tool_called'])), 80)}")
    if session.get("last_error"):
        lines.append(f"直前のエラー: {_clip(session['last_error'], 80)}")
    flow = session.get("goal_flow") or {}
    if flow.get("goal_id"):
        lines.append(f"目標設定の途中（次に聞くこと: {flow.get('step')}、目標ID: {flow.get('goal_id')}）")
    if session.get("pending_expired") or session.get("expired"):
        lines.append("前の確認待ち操作は期限切れになった")
    if pending:
        lines.append(f"確認待ち操作: {_clip(pending.get('question') or pending.get('reason_code'), 160)}")
    return lines


def build_sections(
    values: dict[str, Any],
    truths: dict[str, int],
    *,
    now: datetime,
    degraded: list[str],
    fallback_user: dict[str, Any],
) -> list[Section]:
    v = values
    user = v.get("user") or fallback_user
    local = now.astimezone(JST)
    departments = v.get("departments") or {}
    task_status = tool_words().task_status
    today = local.date()
    sections = [
        Section(
            "session",
            _title(SOURCE_LABELS["session"], None),
            _session_lines(v.get("session") or {}, (v.get("session") or {}).get("pending_action")),
            droppable=False,
        ),
        Section(
            "user",
            _title(SOURCE_LABELS["user"], truths.get("user")),
            [
                f"名前: {user.get('name') or '不明'}",
                # No permission level: the proposer never sees it (constitution §4.4.2).
                f"部署: {_department(user.get('department_id'), departments) or '不明'}",
            ],
            droppable=False,
        ),
        Section(
            "teachings",
            _title(SOURCE_LABELS["teachings"] + "（最優先で従う）", truths.get("teachings")),
            [f"- {_clip(t.get('content'))}" for t in v.get("teachings") or []],
        ),
        Section(
            "company_values",
            _title(SOURCE_LABELS["company_values"] + "（MVV）", truths.get("company_values")),
            [_clip(v["company_values"], 600)] if v.get("company_values") else [],
        ),
        Section(
            "persons",
            _title(SOURCE_LABELS["persons"], truths.get("persons")),
            [
                f"- {p.get('name')}（部署: {_department(p.get('department_id'), departments) or '-'}、"
                f"ID: {p.get('user_id') or '-'}）"
                for p in v.get("persons") or []
            ],
        ),
        Section(
            "tasks",
            _title(SOURCE_LABELS["tasks"], truths.get("tasks")),
            [
                f"- {_clip(t.get('body'), 120)}（期限: {_day(t.get('limit_date'), today, 'なし')}、"
                f"状態: {task_status.get(str(t.get('status')), t.get('status'))}）"
                for t in v.get("tasks") or []
            ],
        ),
        Section(
            "goals",
            _title(SOURCE_LABELS["goals"], truths.get("goals")),
            [
                f"- {_clip(g.get('title') or '（未設定）', 120)}: {g.get('progress', 0)}%"
                f"（期限: {_day(g.get('deadline'), today, '未定')}、"
                f"{GOAL_STATUS.get(str(g.get('status')), g.get('status'))}）"
                for g in v.get("goals") or []
            ],
        ),
        Section(
            "recent_messages",
            _title(SOURCE_LABELS["recent_messages"], truths.get("recent_messages")),
            [f"- {m.get('role')}: {_clip(m.get('text'))}" for m in v.get("recent_messages") or []],
            oldest_first=True,
        ),
        Section(
            "summary",
            _title(SOURCE_LABELS["summary"], truths.get("summary")),
            # one line per level: the level-3 key points first, then each level-2 chunk
            [_clip(line, 400) for line in str(v.get("summary") or "").splitlines() if line.strip()],
        ),
        Section(
            "preferences",
            _title(SOURCE_LABELS["preferences"], truths.get("preferences")),
            [
                f"- {(p.get('subject') + ': ') if p.get('subject') else ''}{_clip(p.get('content'), 120)}"
                for p in v.get("preferences") or []
            ],
        ),
        Section(
            "episodes",
            _title(SOURCE_LABELS["episodes"], truths.get("episodes")),
            [f"- {_when(e.get('when'))}: {_clip(e.get('content'), 240)}" for e in v.get("episodes") or []],
        ),
        Section(
            "knowledge",
            _title(SOURCE_LABELS["knowledge"], truths.get("knowledge")),
            [
                f"- {_clip(k.get('title'), 60)}: {_clip(k.get('snippet'), 240)}"
                for k in v.get("knowledge") or []
            ],
        ),
        Section(
            "datetime",
            _title("現在日時", None),
            [f"{today.year}年{display_date(today)}{display_time(local.time())}（日本時間）"],
            droppable=False,
        ),
    ]
    if degraded:
        sections.append(
            Section(
                "notice",
                _title("注意", None),
                [
                    f"取得できなかった情報: {'、'.join(SOURCE_LABELS.get(d, d) for d in degraded)}。"
                    "推測で補わず、必要なら確認すること。"
                ],
                droppable=False,
            )
        )
    return sections


def agent_state_sections(state: dict[str, Any]) -> list[Section]:
    """The agent state (seed 004 §5) as the budget counts it: the prompt shows it in its own
    block (``brain.agent_state_prompt``), never in the context's text, so each section is
    ``shown=False``. Its open questions and plan are cut in seed 004 §11's order (the last
    item first: the plan's later moves); the rest of the state is never cut."""
    if not state:
        return []
    kept = [str(state.get(k) or "") for k in ("step", "status", "goal", "why_now", "last_delta")]
    kept += [str(c) for c in state.get("constraints") or []]
    return [
        Section("agent_state", "【エージェント状態】", [x for x in kept if x], droppable=False, shown=False),
        Section(
            "open_questions", "未解決の問い", [str(q) for q in state.get("open_questions") or []], shown=False
        ),
        Section("plan_brief", "直近の計画", [str(m) for m in state.get("plan_brief") or []], shown=False),
    ]


def render(sections: list[Section]) -> str:
    """The context's text: the sections it shows, in order."""
    return "\n\n".join(t for t in (s.text() for s in sections if s.shown) if t)
