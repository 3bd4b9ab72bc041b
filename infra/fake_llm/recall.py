"""The scripted model's reading of a question about how something turned out (「〇〇の話どうなった？」):
it is answered from memory, like 「〇〇なんだっけ？」 (``scripted._recall``), by the memory search
tool, which finds the person's memories and the episodes of what happened.

The topic is what comes before the question word, without the words that only point at it
(「の話」「の件」「あの件」「って結局」) or open the sentence (「そういえば」「こないだの」).

>>> is_outcome_question("経費精算の話どうなった？"), outcome_topic("経費精算の話どうなった？")
(True, '経費精算')
>>> outcome_topic("そういえば新卒研修のあの件って結局どないなったん？")
'新卒研修'
"""

from __future__ import annotations

import re

# 「どうなった」「どうなってる」「どうなりました」, Kansai 「どないなった」, Kyushu 「どがんなった」「どげんなっと」,
# 「その後どう」 and a missing-kana typo 「どうなたった」
_OUTCOME = re.compile(
    r"(?:どう|どない|どがん|どげん|ドウ)\s*な(?:った|って|りま|っと|たった|ったん)|その後(?:どう|は|って)"
)
# a task's or a goal's state is their own tools'; a request to act is not a question
_NOT_OURS = ("タスク", "目標", "お願い", "ください", "もらえ")
_OPENERS = re.compile(
    r"^(?:そういえば|そう言えば|そういや|そいえば|ところで|ねえ|ねぇ|あのさ|あの〜|あのー|ちなみに|[、,\s])+"
    r"|^(?:こないだ|この前|先週|前に言ってた|前に話した|例)の?"
)
_POINTERS = (
    "って結局",
    "結局",
    "って",
    "は",
    "あの件",
    "その件",
    "例の件",
    "の話",
    "の件",
    "のこと",
    "のやつ",
    "の",
    "、",
    ",",
    "　",
    " ",
)


def is_outcome_question(text: str) -> bool:
    return bool(_OUTCOME.search(text)) and not any(word in text for word in _NOT_OURS)


def outcome_topic(text: str) -> str:
    """What the question asks about (the memory search's query); the whole text when nothing is left."""
    found = _OUTCOME.search(text)
    topic = text[: found.start()] if found else text
    before = None
    while before != topic:
        before = topic
        topic = _OPENERS.sub("", topic)
        for word in _POINTERS:
            topic = topic.removesuffix(word)
    return topic if len(topic) >= 2 else text.strip()
