"""Which past-tense 「作成したウル」 in a text answer claims that THIS turn did something (§4.4.1).

A text answer runs no tool, so a sentence saying this turn created, sent or saved something is
untrue and is replaced. Not every past tense is such a claim:

| the reply says | why it is no claim of this turn |
|---|---|
| 「作成したら教えてね」「送信しましたか？」 | a condition or a question, not an assertion |
| 「作成したウルね、ありがとう」 to 「タスク作ってくれてありがとう」 | the user thanks for what was done before, and asks nothing new |
| 「さっき作成したタスクは…」 | it names an earlier time |
| 「作成したウル」 when an earlier reply of the conversation (or an earlier step of this turn) said it | a past action being recalled |

The rest is a claim. Quoted words (「…」) are removed before this (``constitution._unquoted``).

>>> said = Said(user_text="見積書のタスク作ってくれてありがとう！")
>>> claims(["作成したウル"], "作成したウルね、どういたしましてウル🐺", said)
[]
>>> claims(["作成したウル"], "作成したウル🐺", Said(user_text="見積書のタスクを作って"))
['作成したウル']
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field

_THANKS = re.compile(
    r"ありがと|有難う|有り難う|サンキュ|さんきゅ|感謝|助かっ|助かり|助かる|おおきに|お疲れ|おつかれ|thank|thx|\bty\b",
    re.IGNORECASE,
)
# a request in the same message: 「ありがとう、あと山田さんにも作って」 asks for something new
_REQUEST = re.compile(
    r"お願い|ください|下さい|頼む|頼んで|(?:して|作って|送って|登録して|やって|しといて|消して|変えて)"
    r"(?:ほしい|欲しい|おいて|もらえ|くれる|くれない|ね|よ|[。！!？?\s]|$)|しといて",
)
_AFTER = re.compile(r"^(?:ら|か|の?か|っけ|？|\?|ウル(?:か|？|\?)|って(?:いう|言|ことで))")
_EARLIER = re.compile(
    r"さっき|先ほど|さきほど|前回|前に|この前|以前|先日|昨日|きのう|一昨日|先週|今朝|午前中|この間"
)
_SENTENCE_END = re.compile(r"[。！!？?\n]")
_STEMS = re.compile(r"(作成|登録|送信|削除|変更|更新|保存|完了|記憶|アナウンス|追加|実行)")


@dataclass(frozen=True)
class Said:
    """What the turn knows besides the reply: the user's words and what was said before
    (the conversation's earlier replies, this turn's earlier steps as a user reads them)."""

    user_text: str = ""
    earlier: tuple[str, ...] = field(default_factory=tuple)


def thanks_only(text: str) -> bool:
    """The message thanks for something and asks for nothing new."""
    plain = unicodedata.normalize("NFKC", text)
    return bool(_THANKS.search(plain)) and not _REQUEST.search(plain)


def claims(patterns: Iterable[str], text: str, said: Said) -> list[str]:
    """The matches of ``patterns`` in ``text`` that assert an execution of this turn."""
    if thanks_only(said.user_text):
        return []
    found: list[str] = []
    for pattern in patterns:
        for m in re.finditer(pattern, text):
            if not _excused(text, m, said):
                found.append(m.group(0))
    return found


def _excused(text: str, m: re.Match[str], said: Said) -> bool:
    if _AFTER.match(text[m.end() :]):
        return True
    start = max((e.end() for e in _SENTENCE_END.finditer(text, 0, m.start())), default=0)
    if _EARLIER.search(text[start : m.start()]):
        return True
    stem = _STEMS.search(m.group(0))
    if stem is None:
        return False
    verb = stem.group(1)
    return any(_done_in(verb, e) for e in said.earlier)


def _done_in(stem: str, earlier: str) -> bool:
    return bool(re.search(f"{stem}(?:した|しました|済み|を完了|done|ok)", earlier)) or (
        stem == "完了" and "完了にした" in earlier
    )
