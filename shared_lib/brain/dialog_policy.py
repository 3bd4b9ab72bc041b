"""The dialog policy (seed 004 §9), enforced where code can, instructed where only the model can.

=====================  ===========================================================  ==================
rule                   enforced here / elsewhere                                    instructed
=====================  ===========================================================  ==================
Clarify: one question  ``check``: more than one question in what the user reads    Base, ``clarify``
                       (``clarification_question`` + ``text_response``) is
                       invalid → the one retry with guidance; ``enforce`` after the
                       retry keeps only the first question
Propose A/B            ``check``: at most ``MAX_OPTIONS`` options (retry), then     Base, ``clarify``
                       ``enforce`` keeps the first ones; two is instructed
Summarise → next       (only the model can)                                         ``summarise``
Gate before a write    the executor runs a tool only on this step's guardian        Base, ``plan``,
                       allow/modify and authorization ``allowed``                   ``confirm_gate``
                       (``layers/executor.py``, ``tests/unit/loop``)
=====================  ===========================================================  ==================

How a question is counted: the text is cut into sentences at 。！？!? (ASCII ``?``/``.``
only before a space or the end, so an address's ``?`` is not an end) and at line ends,
never inside quotes (「」『』“”""): quoted words are the user's or a title, not a question
of ours, and they are left out before a sentence is judged. A sentence is a question when it
ends in ？ or ``?``, or without one in a question ending (ですか, ますか, でしょうか, …).
Rhetorical endings without a question mark (「〜ではないでしょうか。」「〜じゃないですか。」)
are not questions; with ？ they are. A confirmation question of a tool call is the gate's,
not a clarification, and is not counted.

>>> count_questions("どちらの会議ウル？ それと、時間はいつがいいウル？")
2
>>> count_questions("「明日ですか？」と聞かれたウル。どう答えるウル？")
1
>>> keep_first_question("どちらの会議ウル？ 時間はいつウル？ 決まったら登録するウル🐺")
'どちらの会議ウル？ 決まったら登録するウル🐺'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from shared_lib.turn.proposal import ClarificationProposal, Proposal, TextResponseProposal

MAX_QUESTIONS = 1
MAX_OPTIONS = 3  # A/B is two; three at most (seed 004 §9 "Propose")
QUOTES = {"「": "」", "『": "』", "“": "”", '"': '"'}
HARD_ENDS = "。！？\n"
SOFT_ENDS = "?!."  # an end only before whitespace or the end of the text
QUESTION_MARKS = "？?"
QUESTION_ENDING = re.compile(r"(ですか|ますか|でしょうか|ましょうか|ませんか|だろうか)ね?$")
RHETORICAL = re.compile(r"(ではない|じゃない|ではありません|じゃありません)(でしょうか|ですか)ね?$")
TRAILING = re.compile(r"[\s。．.！!…〜~\u2600-\u27bf\U0001F300-\U0001FAFF]+$")  # marks, emoji


@dataclass(frozen=True)
class Problem:
    """A broken rule: a stable code and the Japanese guidance of the one retry."""

    code: str
    guidance: str


def _depths(text: str) -> list[int]:
    """The quote depth of each character (a quote mark itself counts as inside); a text whose
    quotes do not close is read as having none, so an unclosed 「 cannot hide a question."""
    depths, closing = [], list[str]()
    for ch in text:
        if closing and ch == closing[-1]:
            depths.append(len(closing))
            closing.pop()
        elif ch in QUOTES:
            closing.append(QUOTES[ch])
            depths.append(len(closing))
        else:
            depths.append(len(closing))
    return [0] * len(text) if closing else depths


def sentences(text: str) -> list[str]:
    """``text`` cut after each sentence end outside quotes; joined they are ``text`` again."""
    out: list[str] = []
    start = 0
    for i, depth in enumerate(_depths(text)):
        if depth == 0 and _ends_at(text, i):
            out.append(text[start : i + 1])
            start = i + 1
    if start < len(text):
        out.append(text[start:])
    return out


def _ends_at(text: str, i: int) -> bool:
    ch, nxt = text[i], text[i + 1 : i + 2]
    if nxt and nxt in HARD_ENDS + SOFT_ENDS:
        return False  # 「本当？！」: the run of marks ends the sentence once, at its last mark
    if ch in HARD_ENDS:
        return True
    return ch in SOFT_ENDS and (not nxt or nxt.isspace() or not nxt.isascii())


def _unquoted(sentence: str) -> str:
    return "".join(ch for ch, depth in zip(sentence, _depths(sentence), strict=True) if depth == 0)


def is_question(sentence: str) -> bool:
    core = TRAILING.sub("", _unquoted(sentence))
    if not core:
        return False
    if core[-1] in QUESTION_MARKS:
        return True
    return bool(QUESTION_ENDING.search(core)) and not RHETORICAL.search(core)


def count_questions(text: str) -> int:
    return sum(is_question(s) for s in sentences(text or ""))


def keep_first_question(text: str) -> str:
    """``text`` without the questions after its first (the other sentences stay)."""
    kept, asked = [], False
    for sentence in sentences(text):
        if is_question(sentence):
            if asked:
                continue
            asked = True
        kept.append(sentence)
    return "".join(kept).strip()


def user_text(proposal: Proposal) -> str:
    """What the user reads of the proposal and may contain a clarifying question."""
    root = proposal.root
    if isinstance(root, ClarificationProposal):
        return root.clarification_question
    if isinstance(root, TextResponseProposal):
        return root.text_response
    return ""  # a tool call's confirmation question is the gate's question, not a clarification


def check(proposal: Proposal) -> Problem | None:
    """The first rule the proposal breaks (``None``: none)."""
    asked = count_questions(user_text(proposal))
    if asked > MAX_QUESTIONS:
        return Problem(
            "dialog.too_many_questions",
            f"ユーザーへの質問が{asked}つあった。1回の返答で聞く質問は1つまで。"
            "いちばん大事な質問を1つだけ残し、ほかは聞かないこと。",
        )
    root = proposal.root
    if isinstance(root, ClarificationProposal) and len(root.options) > MAX_OPTIONS:
        return Problem(
            "dialog.too_many_options",
            f"options が{len(root.options)}個あった。選択肢は2つ（A/B）、多くても{MAX_OPTIONS}つにすること。",
        )
    return None


def enforce(proposal: Proposal) -> tuple[Proposal, list[str]]:
    """After the retry: keep only the first question and the first ``MAX_OPTIONS`` options.

    Returns the proposal (unchanged when it breaks nothing) and the codes of what was cut."""
    root, update, cut = proposal.root, dict[str, Any](), []
    text = user_text(proposal)
    if count_questions(text) > MAX_QUESTIONS:
        field = "clarification_question" if isinstance(root, ClarificationProposal) else "text_response"
        update[field] = keep_first_question(text)
        cut.append("dialog.too_many_questions")
    if isinstance(root, ClarificationProposal) and len(root.options) > MAX_OPTIONS:
        update["options"] = list(root.options[:MAX_OPTIONS])
        cut.append("dialog.too_many_options")
    return (Proposal(root=root.model_copy(update=update)) if update else proposal), cut
