"""Rule-based parameter extraction of the legacy brain, keyed by parameter *name*.

Each rule recognises one kind of value in the message (a person, a date — found by
``shared_lib.dates``, the reader the executor and the guardian use —, a quoted or
colon-separated content, "全員", a level, a percentage). The content of an announcement or a
message is what is to be said, never the instruction around it: 「全員に」 before it and
「とアナウンスして」 after it are taken off (``brain.json`` ``legacy``), and what is left
must still say something. Only fields the tool declares
are filled; the tool's own model then decides whether the result is usable. Every value
comes from the user's message (``parameter_sources`` = ``user_message``), except the
sender's own name for "自分" (``default``).

>>> from shared_lib.tools.builtin import builtin_registry
>>> extract(builtin_registry().get("chatwork_task_create"), "田中さんに見積書作成のタスクを明日までにお願い")[0]
{'body': '見積書作成', 'assignee_name': '田中', 'limit_date': '明日'}
"""

from __future__ import annotations

import re
from collections.abc import Callable

from shared_lib.brain.config import Legacy, load_brain_config
from shared_lib.dates import find
from shared_lib.tools.registry import ToolSpec

_NAME = re.compile(r"([一-龥々ァ-ヴー]{1,8})(?:さん|くん|様|君)")
_EVERYONE = ("全員", "みんな", "皆さん", "みなさん", "全社員", "社員全員", "全社", "皆様", "みなさま")
_SELF = ("自分", "私", "俺", "僕", "わたし")
_QUOTED = re.compile(r"[「『]([^」』]+)[」』]")
_LEVEL = re.compile(r"(?:レベル|level)\s*(\d)", re.IGNORECASE)
_PERCENT = re.compile(r"(\d{1,3})\s*[%％]")
_FILLER = re.compile(
    r"(?:さん|くん|様|君)?(?:に|へ|の|を|は|が|、|。|まで|までに|中に|\s)+$|^(?:に|へ|の|を|は|が|、|\s)+"
)
_TAIL = re.compile(
    r"(?:という|の|を)?(?:タスク|仕事|件)?(?:を)?(?:お願い|頼んで|依頼して|作って|追加して|して(?:ほしい|ください)?)"
    r".*$"
)


def _person(text: str) -> str | None:
    m = _NAME.search(text)
    return m.group(1) if m else None


def person_named(text: str) -> bool:
    """Someone is named (「田中さん」, 「自分」): a please (お願い) then asks them for something."""
    return _person(text) is not None or any(w in text for w in _SELF)


def _said(text: str, legacy: Legacy) -> str | None:
    """What an announcement says: quoted or after a colon as written, otherwise the text without
    「全員に」 before it and 「とアナウンスして」 after it; ``None`` when nothing is left to say."""
    quoted = _QUOTED.search(text)
    if quoted or any(c in text and text.split(c, 1)[1].strip() for c in ("：", ":")):
        return _content(text)
    body = re.sub(legacy.recipient_prefix, "", text.strip())
    # the instruction ends the sentence it is in (「…を周知して。締切は11/30です」): take it off
    # there and keep the sentences around it
    sentences = [x for x in re.split(r"(?<=[。！!？?\n])", body) if x.strip()]
    body = "".join(
        re.sub(legacy.instruction_tail, "", x.rstrip("。！!？?\n "))
        + ("。" if i < len(sentences) - 1 else "")
        for i, x in enumerate(sentences)
    ).strip(" 、,，。")
    body = re.sub(
        rf"^{_NAME.pattern}(?:に|へ|宛てに|あてに)?[、,，\s]*", "", body
    )  # 「佐藤さんに」 is whom, not what
    return body if len(body) >= 4 and body != text.strip() else None


def _date(text: str) -> str | None:
    """The first date expression as written (``shared_lib.dates``), or a time said as a deadline
    (「17時までに」); the tool reads it whole."""
    return find(text, deadline_times=True)


def _content(text: str) -> str:
    quoted = _QUOTED.search(text)
    if quoted:
        return quoted.group(1).strip()
    for colon in ("：", ":"):
        if colon in text and text.split(colon, 1)[1].strip():
            return text.split(colon, 1)[1].strip()
    return text.strip()


def _task_body(text: str) -> str | None:
    """What the task is: after the person (「田中さんに見積書を」), or before them when nothing
    follows but the request (「会議の資料、田中さんに作ってもらうようお願い」)."""
    name = _NAME.search(text)
    after = _body_of(text[name.end() :] if name else text)
    if after or not name:
        return after
    return _body_of(text[: name.start()])


def _body_of(text: str) -> str | None:
    rest = text
    for _ in range(3):  # the date expressions (and their までに) are not the body
        said = find(rest, deadline_times=True)
        if not said:
            break
        rest = re.sub(re.escape(said) + "(?:までに|まで|中に|中|に)?", "", rest, count=1)
    rest = _TAIL.sub("", rest)
    for _ in range(3):
        rest = _FILLER.sub("", rest.strip(" 、,，。🙏"))
    return rest or None


Rule = Callable[[str], object | None]
RULES: dict[str, Rule] = {
    "assignee_name": lambda t: _person(t) or next((w for w in _SELF if w in t), None),
    "target_user_name": _person,
    "body": _task_body,
    "limit_date": _date,
    "deadline": _date,
    "content": _content,
    "title": lambda t: _QUOTED.search(t).group(1) if _QUOTED.search(t) else None,  # type: ignore[union-attr]
    "query": _content,
    "task_query": _content,
    "goal_query": _content,
    "memory_query": _content,
    "progress_content": _content,
    "recipients": lambda t: "all" if any(w in t for w in _EVERYONE) else None,
    "new_level": lambda t: int(m.group(1)) if (m := _LEVEL.search(t)) else None,
    "progress_percent": lambda t: int(m.group(1)) if (m := _PERCENT.search(t)) else None,
}


_QUERIES = ("task_query", "goal_query", "memory_query", "query")
# a thing named only by pointing at it (「それ完了にして」): the launch brain cannot tell which one
_POINTING = re.compile(
    r"(?:それ|あれ|これ|例の(?:やつ|件)?|さっきの(?:やつ|件)?|あの件|その件|アレ|ソレ|コレ|やつ|件|"
    r"完了|終わった|済み|削除|消して|消す|取り消し|して|にして|お願い|ください|[をにはがのも、。！!？?\s])+"
)


def _pointing_only(value: object) -> bool:
    return isinstance(value, str) and len(_POINTING.sub("", value)) < 2


def extract(
    spec: ToolSpec, text: str, legacy: Legacy | None = None
) -> tuple[dict[str, object], dict[str, str]]:
    """(parameters, parameter_sources) for the fields ``spec`` declares."""
    params: dict[str, object] = {}
    sources: dict[str, str] = {}
    said = legacy or load_brain_config().legacy
    for name in spec.params.model_fields:
        rule = RULES.get(name)
        value = _said(text, said) if name == "message" else rule(text) if rule else None
        if value is None or value == "" or (name in _QUERIES and _pointing_only(value)):
            continue
        params[name] = value
        sources[name] = "default" if name == "assignee_name" and value in _SELF else "user_message"
    return params, sources
