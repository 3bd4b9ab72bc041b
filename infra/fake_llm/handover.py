"""The scripted model's answer to a hand-over check (seed 001 §14.5: «xxxのこと忘れないでね» →
«xxxのことは安心して任せて»): a question that asks whether something said earlier in this
conversation was kept (「〇〇のこと、忘れてないよね？」「〇〇のこと忘れないでね、△△覚えてる？」).

It answers **only from the conversation the request carries** (the context's 【直近の会話】 and
【会話の要約】, as the product renders them): the earlier words of the person that name the
topic are what it repeats back. A request whose context does not carry them (a context that has
lost its history) gets the answer a model without memory gives: it does not know and asks back.
It never reads the store.

>>> is_question("山田さんとの打ち合わせのこと、忘れてないよね？場所はどこだったっけ？")
True
>>> is_question("来週の打ち合わせは304号室。忘れないでね🙏")
False
>>> topic_of("山田さんとの打ち合わせのこと、忘れてないよね？")
'山田さんとの打ち合わせ'
"""

from __future__ import annotations

import re
import unicodedata

from infra.fake_llm.scenario import JSON, MessagesRequest, content_text

# a reference to keeping something (standard, Kansai, Kyushu, a dropped kana), then a question
_KEEP = re.compile(
    r"忘れ(?:ないで|んといて|んで|てない|てへん|とらん|てなか|てないよね|てませんよね|ちゃった)"
)
_ASKS = re.compile(r"[?？]|覚えて(?:る|ます|とる)|言ってみて|教えて|だったっけ|やったっけ|だっけ|かな")
_TOPIC = re.compile(r"^(.{2,40}?)(?:のこと|の件|の話|って)")
_OPENERS = re.compile(
    r"^(?:そういえば|そういや|ところで|ねえ|ねぇ|あのさ|さっきの|さっき言った|前に言った)[、,\s]*"
)
_SECTIONS = ("【直近の会話】", "【会話の要約】")
_LINE = re.compile(r"^-?\s*(user|assistant)?:?\s*(.*)$")
_CHUNKS = re.compile(
    r"[一-龥々ァ-ヴー]{1,5}さん|[一-龥々]{2,}|[ァ-ヴー]{2,}|[A-Za-z0-9]{2,}"
)  # names and nouns, not particles


def is_question(text: str) -> bool:
    """A hand-over check: it refers to keeping something and asks (not a fact being handed over)."""
    return bool(_KEEP.search(text)) and bool(_ASKS.search(text))


def topic_of(text: str) -> str:
    """What the check is about: the words before 「のこと」「の件」 (the whole question otherwise)."""
    text = _OPENERS.sub("", unicodedata.normalize("NFKC", text).strip())
    found = _TOPIC.search(text)
    return (found.group(1) if found else text).strip("、, 　")


def conversation(
    request: MessagesRequest, sections: tuple[str, ...] = _SECTIONS
) -> list[tuple[str | None, str]]:
    """(role or ``None``, text) of each line of ``sections`` (【直近の会話】's ``- user: …``, the
    summary's plain lines), in every text of the request (system and messages)."""
    texts = [request.system_text(), *(content_text(m.get("content", "")) for m in request.messages)]
    found: list[tuple[str | None, str]] = []
    for text in texts:
        for section in sections:
            for part in text.split(section)[1:]:
                body = part.split("\n\n", 1)[0].split("\n【", 1)[0]
                for raw in body.splitlines()[1:] if body.startswith("（") else body.splitlines():
                    line = _LINE.match(raw.strip())
                    if line and line.group(2):
                        found.append((line.group(1), line.group(2).strip()))
    return found


def conversation_lines(request: MessagesRequest) -> list[str]:
    """The person's earlier words the request carries: the user lines of 【直近の会話】 and the lines
    of 【会話の要約】."""
    return [text for role, text in conversation(request) if role != "assistant"]


def _overlap(topic: str, line: str) -> int:
    return sum(len(chunk) for chunk in _CHUNKS.findall(topic) if chunk in line)


def remembered(topic: str, lines: list[str], asked: str) -> str | None:
    """The earlier line that names the topic best (not the question itself), or ``None``."""
    asked = unicodedata.normalize("NFKC", asked).strip()
    scored = [
        (_overlap(topic, unicodedata.normalize("NFKC", line)), i, line)
        for i, line in enumerate(lines)
        if unicodedata.normalize("NFKC", line).strip() != asked and not is_question(line)
    ]
    best = max(scored, default=(0, 0, ""))
    return best[2] if best[0] >= 2 else None


_KEEP_ASK = re.compile(
    r"(?:の?も|の?を|は|って)?(?:絶対|ちゃんと)?忘れ(?:ないで|んといて|んで)(?:ね|な|よ|ください)?[🙏🐺!！。]*"
)


def _fact(line: str) -> str:
    """The earlier words without the request to keep them (「…持っていくのも忘れないでね🙏」 →
    「…持っていく」).

    >>> _fact("場所は304号室に決まったよ。見積書を持っていくのも忘れないでね🙏")
    '場所は304号室に決まったよ。見積書を持っていく'
    """
    return _KEEP_ASK.sub("", line).strip().rstrip("。！!、")


def proposal(said: str, request: MessagesRequest) -> JSON | None:
    """The ``text_response`` to a hand-over check, or ``None`` when ``said`` is not one."""
    if not is_question(said):
        return None
    topic = topic_of(said)
    line = remembered(topic, conversation_lines(request), said)
    if line is None:
        reply = (
            f"ごめんなさいウル、「{topic}」のことって何だったか分からないウル…。もう一度教えてほしいウル？"
        )
        strategy = "会話の記録に該当する話が見当たらないので、正直に分からないと伝えて聞き返す"
        confidence = 0.55
    else:
        reply = f"{topic}のことは安心して任せてほしいウル！「{_fact(line)}」って聞いているウル🐺"
        strategy = "直近の会話で頼まれた内容を、覚えている事実として具体的に言い直して安心してもらう"
        confidence = 0.9
    return {
        "output_type": "text_response",
        "reasoning": {
            "intent_understanding": f"「{topic}」について以前話したことを覚えているか確かめたいという問いかけ",
            "response_strategy": strategy,
            "no_tool_reason": "会話の中で聞いた内容の確認なので、ツールを呼ばずに会話の記録から答える",
        },
        "confidence": {"overall": confidence, "intent": confidence, "parameters": confidence},
        "text_response": reply,
    }
