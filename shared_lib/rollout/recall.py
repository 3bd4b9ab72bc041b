"""The recall gate (seed 001 §14.5, v0.4 hand-over check): a candidate is promoted only when it
remembers what the serving revisions were told.

Before any traffic shift the pipeline (``infra.recall_gate``) hands a conversation over: the
**stable** revisions hear a fact in a fresh conversation of the smoke tenant (``RecallProbe``
``seed_turns``: «xxxのこと忘れないでね»), then the **candidate** (a smoke turn: every candidate
layer, context to responder) is asked about it (``question``: 「xxxのこと、忘れてないよね？…」).
The answer is judged here (``judge``):

1. fixed rules, in order (``RecallCode``): no reply; a reply that says it does not know
   («xxxってなに？» is the seed's NG example) or asks back; a reply that does not name every key
   term of the fact. The key terms are said only in the seeded conversation, never in the
   question, so an answer that merely repeats the question cannot pass (seed: 「単なるオウム返し
   ではなく」). Text is compared normalised (``normalise``: NFKC width, katakana as hiragana,
   kanji digits as digits, no spaces), so 「３０４号室」 and 「ノートＰＣ」 count;
2. then, where one is configured, an evaluator peer (``evaluator_request``) is asked whether
   the answer shows the fact was understood; its "no" refuses, its silence (an error, an
   unparsable answer) leaves the fixed rules' verdict standing.

Each run draws its fact (a person, a room number, a thing to bring) from ``run_id`` and fresh
randomness: a stale conversation, or a reply cached from an earlier run, names another fact.
A failed verdict keeps the stable revisions (the pipeline step exits 1 before ``traffic``) and
is written to ``rollout_recall_checks/{run_id}`` with its code and the reply.

>>> probe = make_probe("b1", random.Random(7))
>>> probe.key_terms[0] in probe.seed_turns[0] and probe.key_terms[0] not in probe.question
True
>>> judge(probe, "ごめんなさいウル、何のことだったか分からないウル…").code.value
'DOES_NOT_KNOW'
"""

from __future__ import annotations

import json
import random
import re
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from shared_lib import collections
from shared_lib.errors import LLMError
from shared_lib.ports import LLMPeer, LLMRequest, Store

PEOPLE = ("山田", "佐々木", "高橋", "渡辺", "中村", "小林", "加藤", "吉田", "松本", "井上", "森", "石川")
THINGS = (
    "見積書",
    "ノートPC",
    "名刺",
    "契約書の控え",
    "会社案内のパンフレット",
    "サンプル品",
    "印鑑",
    "議事録",
)
WHEN = ("来週の", "明日の", "金曜の", "月曜の", "週明けの")


class RecallCode(StrEnum):
    RECALLED = "RECALLED"
    NO_REPLY = "NO_REPLY"
    DOES_NOT_KNOW = "DOES_NOT_KNOW"
    ASKS_BACK = "ASKS_BACK"
    MISSING_TERMS = "MISSING_TERMS"
    EVALUATOR_REFUSED = "EVALUATOR_REFUSED"
    NOT_APPLICABLE = "NOT_APPLICABLE"


MESSAGES = {
    RecallCode.RECALLED: "the candidate named the fact the stable revisions were told",
    RecallCode.NO_REPLY: "the candidate gave no reply to the recall question",
    RecallCode.DOES_NOT_KNOW: "the candidate said it does not know what it was told",
    RecallCode.ASKS_BACK: "the candidate asked back what it was told",
    RecallCode.MISSING_TERMS: "the candidate's reply does not name the fact",
    RecallCode.EVALUATOR_REFUSED: "the evaluator peer judged that the reply does not show the fact was understood",
    RecallCode.NOT_APPLICABLE: (
        "not judged: the smoke tenant is served by the legacy keyword brain, which keeps no conversation"
        " (put charter-smoke on llm in the flags' org_modes to judge the LLM brain)"
    ),
}


@dataclass(frozen=True)
class RecallProbe:
    """One run's hand-over: what the stable revisions hear, what the candidate is asked, and the
    terms (said only in ``seed_turns``) its answer must name."""

    run_id: str
    topic: str
    seed_turns: tuple[str, ...]
    question: str
    key_terms: tuple[str, ...]


def make_probe(run_id: str, rng: random.Random | None = None) -> RecallProbe:
    """A fact of its own for ``run_id``: who, which room, what to bring (``rng`` for tests)."""
    rng = rng or random.SystemRandom()
    person, thing, when = rng.choice(PEOPLE), rng.choice(THINGS), rng.choice(WHEN)
    room = str(rng.randint(201, 989))
    topic = f"{person}さんとの打ち合わせ"
    seed = f"{when}{topic}、場所は{room}号室に決まったよ。{thing}を持っていくのも忘れないでね🙏"
    question = f"{topic}のこと、忘れてないよね？場所と持っていくもの、言ってみて"
    probe = RecallProbe(run_id, topic, (seed, "ありがとう、助かる！"), question, (room, thing))
    hidden = normalise(probe.question)
    assert not any(normalise(t) in hidden for t in probe.key_terms), "a key term leaked into the question"
    return probe


_KANJI_DIGITS = str.maketrans("〇一二三四五六七八九", "0123456789")


def normalise(text: str) -> str:
    """Width, kana and digits as one: NFKC, katakana as hiragana, kanji digits, no spaces, lower case.

    >>> normalise("ノートＰＣ　３０４号室") == normalise("のーとpc304号室")
    True
    """
    text = unicodedata.normalize("NFKC", text).lower().translate(_KANJI_DIGITS)
    text = "".join(chr(ord(c) - 0x60) if "ァ" <= c <= "ヶ" else c for c in text)
    return re.sub(r"\s+", "", text)


# normalised (hiragana) forms, looked for sentence by sentence
_DOES_NOT_KNOW = re.compile(
    r"(?:わから|分から|わかりませ|分かりませ|しらな|知らな|しりませ|知りませ|覚えてな|覚えていな|覚えとらん"
    r"|思い出せ|おもいだせ|記憶にな|存じませ|把握してな|把握していな)(?!(?:い|ん)?(?:わけ|はず|訳))"
)
_ASKS_BACK = re.compile(
    r"(?:って|とは)(?:なに|何|なん)|(?:何|なん|どの|どれ)の(?:こと|件|話)|どの件|もう(?:一|1|いち)度"
    r"|教えて(?:ほし|くれ|もらえ|ください|くだされ)"
)
# an offer about what may come (「分からないことがあれば」「また何かあったら教えてほしい」) is no confession
_CONDITIONAL = re.compile(r"あれば|あったら|ときは|時は|なら|場合|たら")
_SENTENCE = re.compile(r"[^。!?…]+")


def _said_in_earnest(pattern: re.Pattern[str], said: str) -> bool:
    return any(pattern.search(s) and not _CONDITIONAL.search(s) for s in _SENTENCE.findall(said))


@dataclass(frozen=True)
class RecallVerdict:
    code: RecallCode
    reply: str
    missing: tuple[str, ...] = ()
    evaluator: str = ""  # "" none configured; "agreed", "refused: …", "unavailable: …"
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.code in (RecallCode.RECALLED, RecallCode.NOT_APPLICABLE)

    @property
    def message(self) -> str:
        missing = f" (missing: {', '.join(self.missing)})" if self.missing else ""
        return MESSAGES[self.code] + missing


def not_applicable(reply: str) -> RecallVerdict:
    """The verdict of a recall turn the legacy keyword brain served: nothing to judge."""
    return RecallVerdict(RecallCode.NOT_APPLICABLE, reply)


def fixed_rules(probe: RecallProbe, reply: str) -> RecallVerdict:
    """The rules, in order: a reply, no confession of not knowing, no asking back, every key term."""
    said = normalise(reply)
    if not said:
        return RecallVerdict(RecallCode.NO_REPLY, reply)
    if _said_in_earnest(_DOES_NOT_KNOW, said):
        return RecallVerdict(RecallCode.DOES_NOT_KNOW, reply)
    if _said_in_earnest(_ASKS_BACK, said):
        return RecallVerdict(RecallCode.ASKS_BACK, reply)
    missing = tuple(t for t in probe.key_terms if normalise(t) not in said)
    if missing:
        return RecallVerdict(RecallCode.MISSING_TERMS, reply, missing)
    return RecallVerdict(RecallCode.RECALLED, reply)


EVALUATOR_INSTRUCTIONS = (
    "あなたはAIアシスタントの引き継ぎ検証をする評価者です。旧プロセスが聞いた会話と、新プロセスへの確認の質問、"
    "新プロセスの返答を読み、返答が会話の核心（誰と、どこで、何を）を理解して具体的に答えているかを判定してください。"
    "質問のオウム返し、無関係な返答、聞き返しは不合格です。"
    '次のJSONだけを返してください: {"remembered": true または false, "reason": "理由"}'
)


def evaluator_request(probe: RecallProbe, reply: str, model: str) -> LLMRequest:
    """The one evaluation call: the conversation handed over, the question and the reply, framed."""
    said = "\n".join(f"<user>{t}</user>" for t in probe.seed_turns)
    body = (
        f"<conversation>\n{said}\n</conversation>\n<question>{probe.question}</question>\n"
        f"<reply>{reply}</reply>"
    )
    return LLMRequest(
        call_type="evaluation",
        model=model,
        max_tokens=200,
        system=[{"type": "text", "text": EVALUATOR_INSTRUCTIONS}],
        messages=[{"role": "user", "content": body}],
        temperature=0.0,
    )


def _evaluator_answer(text: str) -> tuple[bool, str] | None:
    start, end = text.find("{"), text.rfind("}")
    try:
        data = json.loads(text[start : end + 1]) if 0 <= start < end else None
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("remembered"), bool):
        return None
    return data["remembered"], str(data.get("reason") or "")[:300]


def judge(
    probe: RecallProbe, reply: str, *, evaluator: LLMPeer | None = None, model: str = ""
) -> RecallVerdict:
    """Fixed rules first; a reply they pass goes to ``evaluator`` (a peer) when one is given."""
    verdict = fixed_rules(probe, reply)
    if not verdict.passed or evaluator is None:
        return verdict
    try:
        answer = _evaluator_answer(evaluator.complete(evaluator_request(probe, reply, model)).text())
    except LLMError as exc:
        return RecallVerdict(verdict.code, reply, evaluator=f"unavailable: {exc.code}")
    if answer is None:
        return RecallVerdict(verdict.code, reply, evaluator="unavailable: no verdict in its answer")
    remembered, reason = answer
    if not remembered:
        return RecallVerdict(RecallCode.EVALUATOR_REFUSED, reply, evaluator=f"refused: {reason}")
    return RecallVerdict(verdict.code, reply, evaluator="agreed")


def record_check(
    store: Store,
    probe: RecallProbe,
    verdict: RecallVerdict | None,
    *,
    at: datetime,
    candidate: str,
    problems: list[str],
    turns: dict[str, str],
) -> str:
    """The run's result at ``rollout_recall_checks/{run_id}`` (an operator's record of why a
    candidate was kept from traffic); returns its path. ``verdict`` ``None``: never judged."""
    path = collections.path("rollout_recall_checks", id=probe.run_id)
    passed = verdict is not None and verdict.passed and not problems
    store.set(
        path,
        {
            "at": at,
            "candidate": candidate,
            "passed": passed,
            "code": verdict.code.value if verdict else "NOT_JUDGED",
            "message": verdict.message if verdict else "; ".join(problems),
            "problems": problems,
            "reply": verdict.reply[:2000] if verdict else "",
            "missing": list(verdict.missing) if verdict else [],
            "evaluator": verdict.evaluator if verdict else "",
            "question": probe.question,
            "key_terms": list(probe.key_terms),
            "turns": turns,
        },
    )
    return path
