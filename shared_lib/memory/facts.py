"""The important facts of messages leaving a conversation's window (seed 001 §19.7), by fixed rules.

Compaction keeps in long-term memory what its summaries may lose. The rules read each message
sentence by sentence (masked, as the history stores it) and keep a sentence that says:

==============  ==============================================================================
kind            what it looks like
==============  ==============================================================================
``remember``    an explicit 「覚えておいて」「これ重要」「忘れないで」 (the seed's first priority)
``decision``    a choice made: 決定・決まり・確定・方針・採用・合意, 「〜にする/します/しよう」,
                「〜ことになった」, 「〜で行こう」, 「〜でお願いします」 (dialect 「〜にしよか」
                「〜で決まりや」 too)
``commitment``  a promise or a deadline: 約束・期限・締切・納期・厳守, 「〜までに」, 「やっておきます」
``preference``  a liking or a wish: 好き・苦手・好み・希望, 「〜してほしい」「〜がいい」「〜はやめて」
``date``        a date or time the reader (``shared_lib.dates``) reads, beside a word of the office
                calendar (会議・打ち合わせ・面談・出張・休み・リリース …)
``tool_result`` the assistant reporting what it did (「登録したウル」「送信しました」)
==============  ==============================================================================

A question (「水曜にする？」「締切いつだっけ」) decides nothing and is not kept, except a
「覚えておいて」. A short decision that points back (「それで決定で！」「じゃあそれで」) keeps the
message before it, which says what was decided. A date is kept as said and as the day it meant
when it was said (「木曜の15時」 said on 11月25日（火） is 「11月27日（木）15時」), so the fact still
means it after the conversation moved on.

>>> from datetime import datetime, timezone
>>> at = datetime(2025, 11, 25, 1, 0, tzinfo=timezone.utc)
>>> said = ["打ち合わせは木曜の15時からにしましょう", "今日は暑いね〜", "会議は水曜にする？"]
>>> [(f.kinds, f.text) for f in extract([{"role": "user", "text": t, "at": at} for t in said])]
[(('decision', 'date'), '打ち合わせは木曜の15時からにしましょう［木曜の15時＝11月27日（木）15時］')]
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from shared_lib.dates import display_reading, read

REMEMBER = re.compile(
    r"覚えて(?:おいて|おいてね|おいてください|といて|て)|これ(?:は)?(?:重要|大事)|重要なので|大事なこと"
    r"|忘れないで|忘れんといて|記憶しておいて|メモしておいて|メモっといて"
)
DECISION = re.compile(
    r"決定|決まり|決まった|決まりました|決めた|決めました|決めよう|確定|合意|方針|採用|正式に"
    r"|(?:こと|事)に(?:する|した|します|しました|なった|なりました|なりまし|しよう)"
    r"|に(?:します|しました|しよう|しよか|しよっか|しましょう|するわ|するね|するよ|する[。！!]|決め)"
    r"|で(?:いきます|行きます|いこう|行こう|いこか|行こか|いきましょう|行きましょう|進めます|進めましょう"
    r"|進めよう|お願いします|おねがいします|お願い[。！!]|よろしく|OK|ok|Ok|オッケー|ええよ|いいよ)"
    r"|に変更|へ変更|に切り替え|へ切り替え|を廃止|をやめる|やめます"
)
COMMITMENT = re.compile(
    r"約束|期限|締切|締め切り|〆切|〆切り|しめきり|納期|厳守|までに|までには|までにお願い"
    r"|やっておきます|やっときます|やります|対応します|担当します|送ります|提出します|出します"
    r"|お任せください|任せて|引き受け|必ず"
)
PREFERENCE = re.compile(
    r"好き|嫌い|苦手|好み|希望|(?:し|やっ|送っ|入れ|書い|連絡し|教え)て(?:ほしい|欲しい|ほし|もらえると)"
    r"|ほしい|欲しい|がいい|が良い|がええ|がいいな|ほうがいい|方がいい|ほうが助かる|方が助かる"
    r"|はやめて|はやめてほしい|しないで(?:ほしい|ください|な)|避けて"
)
OFFICE_WORDS = re.compile(
    r"会議|打ち合わせ|打合せ|ミーティング|MTG|mtg|面談|面接|出張|休み|休暇|有給|リリース|納品|提出"
    r"|訪問|来社|説明会|研修|締切|締め切り|〆切|期限|納期|発表|イベント|飲み会|懇親会|公開|開始|から"
)
DONE = re.compile(
    r"(?:登録|作成|送信|追加|更新|変更|削除|完了|予約|保存|設定|記録|共有|投稿|依頼)(?:した|しました|済み|しておいた)"
)
QUESTION_END = re.compile(r"(?:[?？]|かな|かね|っけ|ですか|ますか|ますかね|か)[\s。・…〜~ー!！w笑]*$")
# 「いこか」「しよか」「やろか」「しましょうか」: a proposal taken up (Kansai and standard), not a question
VOLITIONAL_END = re.compile(r"(?:[こよろ]っ?|しょう?|ましょう?)か[\s。・…〜~ー!！w笑]*$")
POINTS_BACK = re.compile(
    r"^(?:じゃあ|じゃ|では|ほな|なら|よし|うん|はい|了解|OK|ok|おけ)?[、,\s]*(?:それ|これ|そっち|こっち|その案|この案|その方向|そちら|こちら)"
)
ABSOLUTE = re.compile(r"\d+\s*[/月]\s*\d+")
SENTENCE = re.compile(r"[^。！!？?\n]+[。！!？?]*")
MAX_FACT_CHARS = 300
POINTING_CHARS = 20  # a decision this short that points back keeps the message before it


@dataclass(frozen=True)
class Fact:
    """One fact of a message: what it says, why it is kept, and where it came from."""

    kinds: tuple[str, ...]  # in the order of the table above
    text: str
    seq: str  # the message's ``seq`` (the history's order key)
    at: datetime | None
    role: str


def _folded(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


def _is_question(sentence: str) -> bool:
    s = _folded(sentence).strip()
    if re.search(r"[?？][\s!！w笑]*$", s):
        return True
    return bool(QUESTION_END.search(s)) and not VOLITIONAL_END.search(s)


def kinds_of(sentence: str, role: str, at: datetime | None) -> tuple[str, ...]:
    """Why ``sentence`` is worth keeping (empty: it is not)."""
    s = _folded(sentence)
    if REMEMBER.search(s):
        kept = ["remember"]
    elif _is_question(sentence):
        return ()
    else:
        kept = []
    if role == "assistant":  # the assistant reports what it did; it decides nothing itself
        return (*kept, "tool_result") if DONE.search(s) else tuple(kept)
    for kind, rule in (("decision", DECISION), ("commitment", COMMITMENT), ("preference", PREFERENCE)):
        if rule.search(s):
            kept.append(kind)
    reading = read(s, at) if at is not None else None
    if reading is not None and (OFFICE_WORDS.search(s) or (kept and reading.date is not None)):
        kept.append("date")
    return tuple(kept)


def _date_note(text: str, at: datetime | None) -> str:
    """The day a relative date meant when it was said (「［来週＝11月30日（月）］」), else ``""``."""
    if at is None:
        return ""
    reading = read(_folded(text), at)
    if reading is None or reading.date is None or reading.year_said or reading.doubt or reading.ambiguous:
        return ""  # an absolute date is kept as said; a reading in doubt is not made a fact
    if ABSOLUTE.search(_folded(reading.expression)):
        return ""  # 「12/5（金）」 says its day already
    return f"［{reading.expression}＝{display_reading(reading)}］"


def extract(messages: Sequence[dict[str, Any]]) -> list[Fact]:
    """The facts of ``messages`` (history documents: ``role``, ``text``, ``at``, ``seq``), oldest
    first, at most one per message (its kept sentences together)."""
    facts: list[Fact] = []
    previous = ""
    for m in messages:
        text, role = " ".join(str(m.get("text") or "").split()), str(m.get("role") or "")
        at = m.get("at") if isinstance(m.get("at"), datetime) else None
        kept: list[str] = []
        kinds: list[str] = []
        for sentence in (x.strip() for x in SENTENCE.findall(text)):
            found = kinds_of(sentence, role, at)
            if found:
                kept.append(sentence)
                kinds.extend(k for k in found if k not in kinds)
        if kept:
            body = "".join(kept)
            if "decision" in kinds and len(body) <= POINTING_CHARS and POINTS_BACK.search(_folded(body)):
                body = f"{previous}→{body}" if previous else body
            body = (body + _date_note(body, at))[:MAX_FACT_CHARS]
            order = ("remember", "decision", "commitment", "preference", "date", "tool_result")
            facts.append(Fact(tuple(k for k in order if k in kinds), body, str(m.get("seq") or ""), at, role))
        if text:
            previous = text[:MAX_FACT_CHARS]
    return facts


def normalised(text: str) -> str:
    """The form two statements of one fact share: NFKC, lower case, only letters and digits
    (no spaces, punctuation, emoji, long vowels or a 「w」 of laughter at the end)."""
    folded = _folded(text).lower()
    kept = "".join(ch for ch in folded if unicodedata.category(ch)[0] in "LN" and ch != "ー")
    return kept.rstrip("w")
