"""Reading an answer to a pending confirmation (seed 000 §5.1.7 Q2, Q3).

The whole message must be an answer: approval or denial words in Japanese or English,
numbered choices ("1", "１", "①", "1番"), polite fillers, also written together as people type
them (「OKです」「それでお願いします」「中止で」「２でお願いします」: the number answers), and optionally the job id that was
shown (「承認 J-7K2M9Q」, 「J-7K2M9Q はい」; ``ap-`` ids of actions asked before the approval jobs
still read). Anything else is another intent — never a "yes" found
inside a longer sentence (the seed's substring match would read "明日10時" as choice 1).
Words come from the policy configuration (``confirmation``).

>>> read_answer("はい、お願いします！").kind, read_answer("2").kind, read_answer("明日10時にして").kind
('approve', 'deny', 'other')
>>> read_answer("yes ap-7k2m9q").approval_id, read_answer("承認J-7k2m9q").approval_id
('ap-7K2M9Q', 'J-7K2M9Q')
>>> is_urgent("緊急で部長に連絡して")
True
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

from shared_lib.policy.config import Confirmation, load_policy_config

AnswerKind = Literal["approve", "deny", "other"]
# a job id (J-7K2M9Q) or an approval id of before (ap-7K2M9Q), not inside a longer word
# (typed without its hyphen too, 「承認J7DHAJF」: then only in the ids' own alphabet, Crockford's,
# so a word such as "journal" is no id)
_APPROVAL_ID = re.compile(
    r"(?<![0-9a-z])(ap|j)(?:-([0-9a-z]{6})|([0-9abcdefghjkmnpqrstvwxyz]{6}))(?![0-9a-z])", re.IGNORECASE
)
_SEPARATORS = re.compile(r"[\s、。,.!！?？・…~〜()（）「」\[\]]+")


@dataclass(frozen=True)
class Answer:
    kind: AnswerKind
    approval_id: str | None = None


def _norm(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower()
    # drop emoji and other symbols (🐺, ✨) that carry no answer
    return "".join(ch for ch in text if unicodedata.category(ch) not in ("So", "Sk", "Cs"))


@functools.lru_cache(maxsize=16)
def _lexicon(
    approve_words: tuple[str, ...], deny_words: tuple[str, ...], filler_words: tuple[str, ...]
) -> tuple[frozenset[str], frozenset[str], frozenset[str], tuple[str, ...]]:
    """The configured answer words normalised, and their multi-word phrases longest first: once
    per configuration and process, not every turn that reads an answer."""
    approve, deny, filler = (
        frozenset(_norm(w).strip() for w in ws) for ws in (approve_words, deny_words, filler_words)
    )
    phrases = tuple(p for p in sorted(approve | deny | filler, key=len, reverse=True) if " " in p)
    return approve, deny, filler, phrases


def read_answer(text: str, config: Confirmation | None = None) -> Answer:
    cfg = config or load_policy_config().confirmation
    norm = _norm(text)
    found = _APPROVAL_ID.search(norm)
    approval_id = None
    if found:
        prefix = "ap" if found.group(1).lower() == "ap" else "J"
        approval_id = f"{prefix}-{(found.group(2) or found.group(3)).upper()}"
    norm = _APPROVAL_ID.sub(" ", norm)
    approve, deny, filler, phrases = _lexicon(
        tuple(cfg.approve_words), tuple(cfg.deny_words), tuple(cfg.filler_words)
    )
    kinds: set[AnswerKind] = set()
    rest = norm.strip()
    # multi-word phrases first ("do it", "thank you"), then single tokens
    for phrase in phrases:
        if phrase in rest:
            kinds |= {"approve"} if phrase in approve else {"deny"} if phrase in deny else set()
            rest = rest.replace(phrase, " ")
    tokens = [t for t in _SEPARATORS.split(rest) if t]
    chosen = {c for t in tokens if (c := _choice(t))}
    for token in tokens:
        if token in approve or _choice(token) == "1":
            kinds.add("approve")
        elif token in deny or _choice(token) == "2":
            kinds.add("deny")
        elif token in filler:
            continue
        elif (words := _words(token, approve | deny | filler)) is None:
            return Answer("other", approval_id)
        else:  # 「OKです」「それでお願いします」「中止で」「やめといてください」: words run together
            numbered = chosen or any(_choice(word) for word in words)
            for word in words:
                if numbered and word in _ASKING:  # 「2番でお願いします」: the number answers
                    continue
                kinds |= {"approve"} if word in approve else {"deny"} if word in deny else set()
    if len(kinds) != 1:
        return Answer("other", approval_id)
    return Answer(kinds.pop(), approval_id)


# polite asking words: beside a numbered choice they only say 「please」 (「2番でお願いします」)
_ASKING = frozenset(
    {"お願い", "お願いします", "おねがい", "おねがいします", "頼む", "頼みます", "よろしくお願いします"}
)


def _words(token: str, words: frozenset[str]) -> tuple[str, ...] | None:
    """``_segments``, or a numbered choice first (「２でお願いします」: 2, で, お願いします)."""
    found = _segments(token, words)
    numbered = re.match(r"[12](?!\d)", token)
    if found is None and numbered and (rest := _segments(token[1:], words)) is not None:
        return (numbered.group(0), *rest)
    return found


@functools.lru_cache(maxsize=1024)
def _segments(token: str, words: frozenset[str]) -> tuple[str, ...] | None:
    """``token`` as answer words written without a break (longest word first), or ``None`` when
    some part of it is not one; digits never join (「11」 is no 「1」 twice)."""
    if not token:
        return ()
    if token.isdigit():
        return None
    for size in range(min(len(token), 24), 0, -1):
        head = token[:size]
        if head in words and not head.isdigit() and (tail := _segments(token[size:], words)) is not None:
            return (head, *tail)
    return None


def _choice(token: str) -> str | None:
    m = re.fullmatch(r"([12])(番|です|で)?", token)
    return m.group(1) if m else None


def is_urgent(text: str, config: Confirmation | None = None) -> bool:
    """Seed 000 §5.1.7 Q3: urgent words cancel the pending action and the new intent proceeds."""
    cfg = config or load_policy_config().confirmation
    norm = _norm(text)
    for word in cfg.urgent_words:
        w = _norm(word)
        hit = re.search(rf"\b{re.escape(w)}\b", norm) if w.isascii() else w in norm
        if hit:
            return True
    return False
