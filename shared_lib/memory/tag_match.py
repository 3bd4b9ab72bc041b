"""Finding tags by what people type (issue 36): variants, compounds, readings, typos, vectors.

A tag is asked for in many spellings: 「経費」 for 「経費精算」, 「けいひ」 or 「ｹｲﾋ」 for 「経費」,
「打合せ」 for 「打ち合わせ」, 「見積」 for 「見積もり」, 「ＰＣ」 for 「パソコン」, 「経費清算」 typed
for 「経費精算」. ``match_tags`` ranks the tag master against one query, best first, by how
the query matches a tag:

1. ``exact``: the shown name, as typed.
2. ``normalised``: the same ``loose_key``: ``tags.merge_key`` (NFKC, case, width, separators
   such as 「・」, katakana for hiragana, the trailing long vowel), small vowels made full, then, in a word holding a
   kanji, its okurigana left out (打ち合わせ, 打合せ, 打ち合せ → 打合), then a word spelled
   wholly in readings of ``READINGS`` written in kanji (けいひ → 経費). ``READINGS`` is a small
   curated table of office words (readings and a few aliases such as PC ↔ パソコン): a
   supplement to the rules, not a dictionary; a word it lacks is still found by the other rules.
3. ``containment``: one key inside the other, a Japanese compound and its part (経費 ↔ 経費精算,
   精算 ↔ 経費精算); the shorter holds at least two characters, and a Latin one is a whole word.
4. ``typo``: keys of at least ``TYPO_MIN_CHARS`` characters one edit apart (経費清算 → 経費精算).
5. ``vector``: the cosine of the tag names' embeddings (``embedding`` on the tag document, the
   embedder's ``query`` kind, written by ``embed_tags`` when a tag is new or renamed) at least
   ``VECTOR_THRESHOLD``: chosen on one set of pairs and reported on another
   (``infra/bench/tag_pairs.py``).

>>> loose_key("打ち合わせ"), loose_key("打合せ"), loose_key("見積もり"), loose_key("ｹｲﾋ"), loose_key("ＰＣ")
('打合', '打合', '見積', '経費', 'パソコン')
>>> [(m.tag, m.how) for m in match_tags("経費", [{"tag": "経費精算"}, {"tag": "経費"}, {"tag": "会費"}])]
[('経費', 'exact'), ('経費精算', 'containment')]
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from shared_lib.memory.tags import merge_key, normalise
from shared_lib.ports import Doc, Embedder

How = Literal["exact", "normalised", "containment", "typo", "vector"]
RANK: dict[How, int] = {"exact": 0, "normalised": 1, "containment": 2, "typo": 3, "vector": 4}
VECTOR_THRESHOLD = 0.885  # e5-small, query kind: best F0.5 on the tuning pairs (infra/bench/tag_pairs.py)
TYPO_MIN_CHARS = 4  # 会議室/会議費 are one edit apart and two words: only longer keys count typos
MIN_PART_CHARS = 2

# Curated supplement: readings (katakana, as ``merge_key`` writes them) of common office words,
# and aliases, to the key of the written form. Not a dictionary: the rules above do the work.
READINGS: dict[str, str] = {
    "ケイヒ": "経費",
    "セイサン": "精算",
    "シンセイ": "申請",
    "ショウニン": "承認",
    "ミツモリ": "見積",
    "ミツモリショ": "見積書",
    "セイキュウ": "請求",
    "セイキュウショ": "請求書",
    "ウチアワセ": "打合",
    "カイギ": "会議",
    "ギジロク": "議事録",
    "シュッチョウ": "出張",
    "キンタイ": "勤怠",
    "ザンギョウ": "残業",
    "ユウキュウ": "有給",
    "ケイヤク": "契約",
    "ノウキ": "納期",
    "ハッチュウ": "発注",
    "ヨサン": "予算",
    "サイヨウ": "採用",
    "メンセツ": "面接",
    "ケンシュウ": "研修",
    "ジンジ": "人事",
    "ソウム": "総務",
    "エイギョウ": "営業",
    "ハイシン": "配信",
    "pc": "パソコン",
    "パソコン": "パソコン",
    "ノートpc": "ノートパソコン",
}
_READINGS_LONGEST = sorted(READINGS, key=len, reverse=True)
_KANJI = re.compile(r"[\u3400-\u9fff\uf900-\ufaff々〆]")
_HIRAGANA = re.compile(r"[\u3041-\u3096]")
_LATIN = re.compile(r"[0-9a-z]")
_SMALL_VOWELS = str.maketrans("ァィゥェォ", "アイウエオ")


def _in_readings(key: str) -> str | None:
    """``key`` spelled wholly in readings of the table, in their written form, else ``None``."""
    out, i = [], 0
    while i < len(key):
        found = next((r for r in _READINGS_LONGEST if key.startswith(r, i)), None)
        if found is None:
            return None
        out.append(READINGS[found])
        i += len(found)
    return "".join(out) or None


def plain_key(text: str) -> str:
    """``merge_key`` without the okurigana of a word holding a kanji, small vowels made full
    (ソフトウェア = ソフトウエア); no readings."""
    shown = normalise(text)
    if _KANJI.search(shown):
        shown = "".join(c for c in shown if not _HIRAGANA.fullmatch(c))  # okurigana, particles
    return merge_key(shown).translate(_SMALL_VOWELS)


def _readings_inside(key: str) -> str:
    """``key`` with every run of a reading of ``READINGS`` written in kanji (a sentence typed in
    kana: けいひせいさんのしめきり → 経費精算ノシメキリ)."""
    out, i = [], 0
    while i < len(key):
        found = next((r for r in _READINGS_LONGEST if key.startswith(r, i)), None)
        out.append(READINGS[found] if found else key[i])
        i += len(found) if found else 1
    return "".join(out)


def loose_key(text: str) -> str:
    """What makes two spellings of one word equal (see the module's rule 2)."""
    key = plain_key(text)
    return _in_readings(key) or key


def _contains(longer: str, shorter: str) -> bool:
    if len(shorter) < MIN_PART_CHARS or len(shorter) >= len(longer):
        return False
    start = longer.find(shorter)
    while start >= 0:
        end = start + len(shorter)
        latin = _LATIN.fullmatch(shorter[0]) or _LATIN.fullmatch(shorter[-1])
        if not latin or (
            (start == 0 or not _LATIN.fullmatch(longer[start - 1]))
            and (end == len(longer) or not _LATIN.fullmatch(longer[end]))
        ):
            return True
        start = longer.find(shorter, start + 1)
    return False


def one_edit(a: str, b: str) -> bool:
    """``a`` and ``b`` one substitution, insertion or deletion apart (and not equal)."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) > len(b):
        a, b = b, a
    i = next((k for k in range(len(a)) if a[k] != b[k]), len(a))
    return a[i + 1 :] == b[i + 1 :] if len(a) == len(b) else a[i:] == b[i + 1 :]


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    na, nb = math.sqrt(sum(x * x for x in a)), math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


@dataclass(frozen=True)
class TagMatch:
    tag: str
    how: How
    score: float  # within its kind: how close (containment: the share of the longer key)

    def as_json(self) -> Doc:
        return {"tag": self.tag, "how": self.how, "score": round(self.score, 4)}


def how_matched(query: str, tag: str) -> tuple[How, float] | None:
    """How ``query`` matches ``tag`` by spelling (rules 1-4), else ``None``."""
    if query.strip() == tag.strip():
        return "exact", 1.0
    q, t = loose_key(query), loose_key(tag)
    if not q or not t:
        return None
    if q == t or merge_key(query) == merge_key(tag):
        return "normalised", 1.0
    for a, b in {(q, t), (plain_key(query), plain_key(tag))}:
        if a and b and (_contains(b, a) or _contains(a, b)):
            return "containment", min(len(a), len(b)) / max(len(a), len(b))
    if min(len(q), len(t)) >= TYPO_MIN_CHARS and one_edit(q, t):
        return "typo", 1.0 - 1.0 / max(len(q), len(t))
    return None


def match_tags(
    query: str,
    masters: Iterable[Doc],
    *,
    query_vector: Sequence[float] | None = None,
    model: str | None = None,
    threshold: float = VECTOR_THRESHOLD,
    limit: int = 20,
) -> list[TagMatch]:
    """The tags of ``masters`` that ``query`` names, best first (exact > normalised >
    containment > typo > vector; within one kind, the closer first). A tag merged into another
    (``merged_into``) is not offered: its items carry the other now."""
    found: dict[str, TagMatch] = {}
    for doc in masters:
        name = str(doc.get("tag") or "")
        if not name or doc.get("merged_into"):
            continue
        spelled = how_matched(query, name)
        if spelled is not None:
            found[name] = TagMatch(name, *spelled)
            continue
        vector = doc.get("embedding")
        if query_vector is not None and vector and (model is None or doc.get("embedding_model") == model):
            similarity = cosine(query_vector, vector)
            if similarity >= threshold:
                found[name] = TagMatch(name, "vector", similarity)
    ranked = sorted(found.values(), key=lambda m: (RANK[m.how], -m.score, m.tag))
    return ranked[:limit]


def tags_in_text(text: str, masters: Iterable[Doc]) -> list[TagMatch]:
    """The tags a sentence names (a memory search's query): a tag whose key, or a reading or
    alias of it in ``READINGS``, is in the sentence's key (okurigana, particles and separators
    out), or a word of the sentence spelled as the tag (rules 1, 2 and 4)."""
    whole = loose_key(text)
    wholes = {whole, _readings_inside(plain_key(text)), _readings_inside(merge_key(text))}
    words = [w for w in re.split(r"[\s、。,.!?！？「」『』()（）]+", text) if w]
    found: dict[str, TagMatch] = {}
    for doc in masters:
        name = str(doc.get("tag") or "")
        key = loose_key(name)
        if not name or doc.get("merged_into") or len(key) < MIN_PART_CHARS:
            continue
        spellings = {key, *(r for r, written in READINGS.items() if written == key)}
        if whole in spellings or any(_contains(w, k) for w in wholes for k in spellings):
            found[name] = TagMatch(name, "normalised" if whole in spellings else "containment", 1.0)
            continue
        for word in words:
            spelled = how_matched(word, name)
            if spelled is not None and spelled[0] != "containment":
                found[name] = TagMatch(name, *spelled)
                break
    return sorted(found.values(), key=lambda m: (RANK[m.how], -m.score, m.tag))


def embed_tags(store: Any, embedder: Embedder, masters: Iterable[tuple[str, Doc]]) -> int:
    """Embed the names of the tags not yet embedded by ``embedder``'s model, or renamed since
    (``embedded_name``), in one call; store each vector on its tag document. Returns how many."""
    due = [
        (p, doc)
        for p, doc in masters
        if doc.get("tag")
        and (doc.get("embedding_model") != embedder.name or doc.get("embedded_name") != doc.get("tag"))
    ]
    if not due:
        return 0
    vectors = embedder.embed([str(doc["tag"]) for _, doc in due], kind="query")
    for (p, doc), vector in zip(due, vectors, strict=True):
        store.set(
            p,
            {"embedding": vector, "embedding_model": embedder.name, "embedded_name": doc["tag"]},
            merge=True,
        )
    return len(due)
