"""The proposer's reasoning as a confirmation shows it: in the persona's voice, no internals.

The model writes its reasoning for the charter, in plain である調 about 「ユーザー」, and may name
tools, parameters and ISO dates. Before a user reads it (the confirmation's 【やりたいこと】,
【そう考えた理由】, 【ほかの方法】) every sentence is passed through ``for_user``: tool names by
their display names, parameter names by their labels (any other ``snake_case`` word as
「指定した内容」), ISO dates as 「11月10日（火）」, 「ユーザー」 spoken to as 「あなた」, and each
sentence ended the persona's way (its ``gate_reasoning_sentence`` template, plain forms first:
「適切である」 is 「適切だ」).

>>> from shared_lib.persona.catalogue import load_persona
>>> from shared_lib.tools.builtin import builtin_registry
>>> for_user("ユーザーは2026-11-10までに終えたい。chatwork_task_create が適切である",
...          builtin_registry(), load_persona(), today=date(2026, 11, 1))
'あなたは11月10日（火）までに終えたいウル。「タスクの作成」 が適切だウル'
"""

from __future__ import annotations

import re
from datetime import date

from shared_lib.dates import display_date
from shared_lib.persona.catalogue import Persona
from shared_lib.tools.display import name_tools
from shared_lib.tools.registry import ToolRegistry

_ISO_DATE = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})(?:[T ]\d{2}:\d{2}(?::\d{2})?(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?)?"
)
_SNAKE = re.compile(r"(?<![A-Za-z0-9_])[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+(?![A-Za-z0-9_])")
_USER = re.compile(r"(?:この|当該|その|対象の)?ユーザー(?:さん|様)?")
_QUOTES = {"「": "」", "『": "』"}
_PLAIN = (("であった", "だった"), ("である", "だ"), ("でした", "だった"), ("です", "だ"), ("します", "する"))
UNKNOWN = "指定した内容"


def for_user(text: str, registry: ToolRegistry, persona: Persona, *, today: date | None = None) -> str:
    """``text`` as the persona would say it to the user; ``""`` stays ``""``."""
    shown = name_tools(registry, text or "")
    labels = registry.labels()
    shown = _SNAKE.sub(lambda m: f"「{labels.get(m.group(0), UNKNOWN)}」", shown)
    shown = _ISO_DATE.sub(lambda m: _date(m, today), shown)
    shown = _USER.sub("あなた", shown)
    sentences = [s.strip() for s in _sentences(shown) if s.strip(" 　。")]
    return "。".join(_voiced(s, persona) for s in sentences)


def _sentences(text: str) -> list[str]:
    """Sentences ending at 。！？ or a line's end, never inside 「」 or 『』: what the user wrote
    and the model quotes (「12/28(月)は大掃除です。よろしく」) is a quote, not sentences to voice."""
    out, start, closing = [], 0, ""
    for i, ch in enumerate(text):
        if closing:
            closing = "" if ch == closing else closing
        elif ch in _QUOTES:
            closing = _QUOTES[ch]
        elif ch in "。！？!?\n":
            out.append(text[start : i + (ch != "\n")])
            start = i + 1
    return [*out, text[start:]]


def _date(m: re.Match[str], today: date | None) -> str:
    try:
        return display_date(date(int(m.group(1)), int(m.group(2)), int(m.group(3))), today=today)
    except ValueError:
        return m.group(0)


def _voiced(sentence: str, persona: Persona) -> str:
    body = sentence.rstrip("。 　")
    if body.endswith(("！", "!", "？", "?", "ウル")):
        return body
    for formal, plain in _PLAIN:
        if body.endswith(formal):
            body = body[: -len(formal)] + plain
            break
    return persona.message("gate_reasoning_sentence", sentence=body)
