"""One voice: every text of the persona's catalogue and every handler refusal reads as ソウルくん.

GIVEN each message of the catalogue (filled with values as a user would see them) and each
``ToolInputError`` a handler raises (found in the source, so a new one cannot slip by), WHEN it
is phrased, THEN it speaks the persona's way (「ウル」), names no tool or parameter
(``snake_case``), shows no ISO date and no mask placeholder.
"""

from __future__ import annotations

import ast
import re
import string
from pathlib import Path

import pytest

from shared_lib.brain.integration import failure_text
from shared_lib.persona.catalogue import load_persona
from shared_lib.state.gate_text import for_user
from shared_lib.turn.steps import ToolResult
from shared_lib.wiring.features import tool_registry

PERSONA = load_persona()
REGISTRY = tool_registry()
ROOT = Path(__file__).resolve().parents[3] / "shared_lib"
INTERNAL = re.compile(r"(?<![A-Za-z0-9])[a-z]+_[a-z_]+")
ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
MASK = re.compile(r"\[[A-Z]+_\d+\]")
# Parts of other messages, never a reply of their own (a status word inside approval_decided, a
# bare slot the caller fills with a whole persona message).
FRAGMENTS = {
    "job_status_granted",
    "job_status_denied",
    "job_status_auto_approved",
    "clarify",
    "approval_which_line",  # one bullet of approval_which
    "gate_impact_concern",  # one bullet of 【影響】, the policy's ウル message
}
SAMPLE = {
    "name": "山田",
    "count": 2,
    "choices": "営業部の山田太郎さんと開発部の山田花子さん",
    "said": "来週の金曜",
    "shown": "11月20日（金）",
    "field": "担当者",
    "kind": "目標",
    "index": 4,
    "most": 20,
    "tool": "タスクの作成",
    "detail": "担当者が足りないか、読み取れなかった",
    "question": "田中太郎さんにタスクを作っていいウル？",
    # the confirmation's sections, each made by a voiced function of its own
    "reversibility": PERSONA.message("gate_irreversible"),
    "intent": for_user("ユーザーは全員に周知したい", REGISTRY, PERSONA),
    "rationale": for_user("announce が最も適切である", REGISTRY, PERSONA),
    "alternatives": PERSONA.message("gate_no_alternatives"),
}
# Slots that carry a whole text of their own (a list, the announcement's body, a job's report, the
# preview, another catalogue message): the message's own words are those around them.
CONTENT = {"items", "message", "text", "questions", "preview", "jobs", "summary", "impact", "reason"}


ENDING = re.compile(r"ウル[ねよなか]?$|ウル[^\n]{0,3}$")
_TAIL = re.compile(r"(?:\s|[🐺⏰🎯📢！!？?。…〜]|（[^（）]*）|\([^()]*\))+$")
_CHOICES = re.compile(r"(?:\n(?:\d+\. |・|- |【)[^\n]*)+$")


def ending(text: str) -> str:
    """The text's last sentence without emoji, brackets and the numbered choices after it."""
    last = text
    for _ in range(4):
        last = _TAIL.sub("", _CHOICES.sub("", last))
    return last


def voice_problems(text: str) -> list[str]:
    problems = []
    aside = re.search(r"ウル[^（）()]{0,3}[）)]$", text.rstrip())  # 「（…実行したウル🐺）」
    if "ウル" not in text or not (ENDING.search(ending(text)) or aside):
        problems.append(f"does not end in the persona's voice: …{ending(text)[-12:]}")
    problems += [f"internal name {m}" for m in INTERNAL.findall(text)]
    problems += [f"ISO date {m}" for m in ISO_DATE.findall(text)]
    problems += [f"mask placeholder {m}" for m in MASK.findall(text)]
    return problems


def _filled(template: str) -> dict[str, object]:
    fields = {f for _, f, _, _ in string.Formatter().parse(template) if f}
    return {f: "" if f in CONTENT else SAMPLE.get(f, "テスト") for f in fields}


@pytest.mark.parametrize("key", sorted(k for k in PERSONA.messages if k not in FRAGMENTS))
def test_every_catalogue_message_speaks_in_the_persona_voice(key):
    text = PERSONA.message(key, **_filled(PERSONA.messages[key]))
    assert voice_problems(text) == [], (key, text)


def _raised_keys() -> list[tuple[str, str | None, str]]:
    """(file, key, field) of every ``ToolInputError(...)`` in shared_lib."""
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "ToolInputError":
                kw = {k.arg: k.value for k in node.keywords}
                key = kw.get("key")
                keys = [key.body, key.orelse] if isinstance(key, ast.IfExp) else [key]
                field = (
                    ast.literal_eval(kw["field"]) if isinstance(kw.get("field"), ast.Constant) else "title"
                )
                found += [
                    (
                        f"{path.relative_to(ROOT)}:{node.lineno}",
                        ast.literal_eval(k) if isinstance(k, ast.Constant) else None,
                        field,
                    )
                    for k in keys
                ]
    return found


RAISES = _raised_keys()


def test_the_source_scan_finds_the_handlers_refusals():
    assert len(RAISES) > 25


@pytest.mark.parametrize(("where", "key", "field"), RAISES, ids=[r[0] for r in RAISES])
def test_every_handler_refusal_is_said_by_the_persona(where, key, field):
    # GIVEN a refusal with its catalogue key
    assert key is not None, f"{where}: ToolInputError without key="
    template = PERSONA.messages.get(f"tool_error.{key}")
    assert template is not None, f"{where}: no tool_error.{key} in the persona"
    # WHEN the responder phrases it THEN the persona says it
    result = ToolResult(
        tool_name="chatwork_task_create",
        call_index=0,
        ok=False,
        error_code="validation_error",
        result={"error_key": key, "values": _filled(template), "field": field},
    )
    text = failure_text(PERSONA, result, REGISTRY)
    assert voice_problems(text) == [], (where, text)


@pytest.mark.parametrize(
    "reasoning",
    [
        "ユーザーは山田さんに2026-11-10までに資料作成を頼みたい。chatwork_task_create が最も適切である",
        "assignee_name と limit_date が明示されているので、タスク作成ツールを使う",
        "このユーザーは全員への周知を求めている。個別送信では漏れが出るため不適切である。",
        "期限は2026-12-01T09:00:00+09:00と解釈した",
    ],
)
def test_the_models_reasoning_is_shown_only_after_the_display_pass(reasoning):
    shown = for_user(reasoning, REGISTRY, PERSONA)
    assert voice_problems(shown) == [], shown
    assert "ユーザー" not in shown and "である" not in shown


@pytest.mark.parametrize(
    "quoted",
    [
        "仕事納めは12/28(月)です。良いお年を🎍",
        "明日は10時からです！遅れないでください。",
        "『定例』は中止です？",
    ],
)
def test_what_the_reasoning_quotes_is_shown_as_written_not_voiced(quoted):
    # GIVEN the model's reasoning quoting the person's message, sentences and all
    shown = for_user(f"ユーザーは開発部のみんなに「{quoted}」と知らせたいという依頼である", REGISTRY, PERSONA)
    # THEN the quote is the person's words, and only the reasoning around it is in the persona's voice
    assert f"「{quoted}」" in shown and shown.endswith("ウル") and "である" not in shown, shown
