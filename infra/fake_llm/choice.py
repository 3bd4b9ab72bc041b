"""The scripted model's reading of an answer to its own question with numbered options (seed 000
§15.2: 「1. [選択肢1] 2. [選択肢2] どっちですかウル？」): after 「佐藤さんは2人いるウル！…
1. 佐藤一郎 2. 佐藤花子」, a person answers 「2」「２番で」「②」「花子さんの方で🙏」 and means their
request with that person in it.

Like ``handover`` it answers **only from the conversation the request carries** (the context's
【直近の会話】, as the product renders it): the last question of the assistant that listed numbered
people, and the person's request before it. A context that lost them gets ``None`` (the other
rules answer; the fallback asks back). It never reads the store.

>>> options_of("佐藤さんは2人いるウル！どちらにお願いするウル？ 1. 佐藤一郎 2. 佐藤花子")
['佐藤一郎', '佐藤花子']
>>> chosen("②でお願いします🙏", ["佐藤一郎", "佐藤花子"])
'佐藤花子'
>>> chosen("花子さんの方で！", ["佐藤一郎", "佐藤花子"])
'佐藤花子'
>>> chosen("やっぱり山田さんに頼みたい", ["佐藤一郎", "佐藤花子"]) is None
True
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

from infra.fake_llm import handover
from infra.fake_llm.scenario import JSON, MessagesRequest

_SECTION = "【直近の会話】"
# 「1. 佐藤一郎 2. 佐藤花子」 as the reply lists them (the history keeps a reply on one line)
_OPTION = re.compile(r"(?:^|\s)([1-9])[.．)）]\s*([^\s0-9][^\s]{0,19})")
# what an answer that only chooses may say around the choice (after ``_norm``: no spaces, marks or
# emoji): 「じゃあ2番でお願いします」「花子さんの方でよろしく」「②で！」
_LEAD = r"(?:じゃあ|じゃ|では|えっと|うーん|なら)?"
_ENDING = (
    r"(?:の方|のほう|の人)?(?:で|です|だ|に|にして|を)?"
    r"(?:お願い(?:します|しま|ね|)|よろしく(?:お願いします)?|いい|いいよ|ください|くれる|ね|な|かな|です)?"
)
_NUMBER = re.compile(rf"{_LEAD}([1-9])(?:番目?|つ目|個目)?{_ENDING}")
_NAME = r"(?:さん|ちゃん|くん|氏)?"
_LONGEST_ANSWER = 24  # characters: a longer message is a request of its own, not a choice


def _norm(text: str) -> str:
    """NFKC (「２」「②」→「2」), without the emoji, marks and spaces people add to an answer."""
    text = unicodedata.normalize("NFKC", text)
    return "".join(ch for ch in text if unicodedata.category(ch)[0] in "LN" or ch in "ー々").strip()


def options_of(line: str) -> list[str]:
    """The numbered options of one reply, in their order (1, 2, …), or ``[]``."""
    found = _OPTION.findall(unicodedata.normalize("NFKC", line))
    numbers = [int(n) for n, _ in found]
    return [name for _, name in found] if numbers == list(range(1, len(found) + 1)) and found else []


def _surname(options: list[str]) -> str:
    """What every option's name starts with (「佐藤」 of 佐藤一郎 / 佐藤花子)."""
    first = options[0]
    n = 0
    while n < len(first) and all(len(o) > n and o[n] == first[n] for o in options):
        n += 1
    return first[:n]


def chosen(said: str, options: list[str]) -> str | None:
    """The option a short answer picks: by its number, or by the part of a name that tells the
    options apart (「花子さん」 of 佐藤一郎 / 佐藤花子); ``None`` for anything else."""
    plain = unicodedata.normalize("NFKC", said).strip()
    if len(plain) > _LONGEST_ANSWER:
        return None
    compact = _norm(plain)
    if (number := _NUMBER.fullmatch(compact)) is not None:
        n = int(number.group(1))
        return options[n - 1] if n <= len(options) else None
    common = _surname(options)
    named = {
        option
        for option in options
        for name in {option, option[len(common) :]} - {""}
        if re.fullmatch(rf"{_LEAD}{re.escape(name)}{_NAME}{_ENDING}", compact)
    }
    return named.pop() if len(named) == 1 else None


def request_with_choice(said: str, request: MessagesRequest) -> str | None:
    """The person's earlier request with the person they chose in place of the name the question
    asked about, when ``said`` answers the last numbered question of the conversation."""
    lines = [(role, text) for role, text in handover.conversation(request, (_SECTION,)) if role]
    for i in range(len(lines) - 1, -1, -1):
        role, text = lines[i]
        if role != "assistant":
            continue
        options = options_of(text)
        if len(options) < 2:
            return None  # the assistant's last word asked nothing numbered
        pick = chosen(said, options)
        asked = next((t for r, t in reversed(lines[:i]) if r == "user"), None)
        common = _surname(options)
        if pick is None or asked is None or len(common) < 1 or f"{common}さん" not in asked:
            return None
        return asked.replace(f"{common}さん", f"{pick}さん", 1)
    return None


def proposal(said: str, request: MessagesRequest, propose: Callable[[str], JSON]) -> JSON | None:
    """``propose`` (the scripted rules) over the earlier request with the choice in it, or ``None``."""
    rewritten = request_with_choice(said, request)
    return None if rewritten is None else propose(rewritten)
