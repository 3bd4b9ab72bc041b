"""The people's eval set (``people_eval.jsonl``) keeps the shape it promises: written as people
write in ChatWork, Slack and LINE, not as a template. A set that drifts back towards short,
clean, one-person, unlabelled lines fails here."""

from __future__ import annotations

import re
import statistics
import unicodedata
from collections import Counter

from shared_lib.evals.dataset import (
    DATASET,
    PEOPLE_SET,
    PLAIN_CATEGORIES,
    REPLY_LABELLED,
    check_cases,
    load_cases,
)
from shared_lib.wiring.features import tool_registry

CASES = load_cases(PEOPLE_SET)
TEXTS = [c.utterance for c in CASES]

EMOJI = re.compile(r"[\U0001F300-\U0001FAFF\u2600-\u27BF]")
FULL_WIDTH = re.compile(r"[０-９Ａ-Ｚａ-ｚ]")  # full-width digits and letters (１５日, ＰＣ), not ！？
HALF_WIDTH_KANA = re.compile(r"[ｦ-ﾟ]")
# endings and words of Kansai, Hakata, Tohoku, Nagoya, Hiroshima speech
DIALECT = re.compile(
    r"へん|やねん|ほんま|おおきに|あかん|やろ|やわ|やで|やん|やった[？。！]|しといて(?:や|ぇ)|頼むわ|ええ|"
    r"なんぼ|ばい|しとって|けろ|だべ|だがや|じゃけ|のう|よろしゅう|せな|ワシ|ワイ|知らん[？?]|言うて"
)
# who a case names: each person of the demo directory by the names people use for them
NAMED = {
    "鈴木": r"鈴木",
    "田中": r"田中",
    "佐藤一郎": r"佐藤一郎",
    "佐藤花子": r"佐藤花子|花子さん",
    "佐藤 (either)": r"佐藤(?!一郎|花子)",
    "山田": r"山田",
    "カズ": r"カズ",
}


def _share(pattern: re.Pattern[str]) -> float:
    return sum(bool(pattern.search(t)) for t in TEXTS) / len(TEXTS)


def test_the_default_run_reads_both_sets() -> None:
    # GIVEN the default dataset WHEN it is loaded THEN both files' cases are in it
    ids = {c.id for c in load_cases(DATASET)}
    assert {c.id for c in CASES} <= ids and "task-create-01" in ids
    assert check_cases(load_cases(DATASET), tool_registry()) == []


def test_at_least_four_hundred_cases_of_real_lengths() -> None:
    lengths = [len(t) for t in TEXTS]
    assert len(CASES) >= 400
    assert min(lengths) >= 3 and max(lengths) <= 300
    assert min(lengths) <= 5 and max(lengths) >= 250  # the whole range is used, not just the middle
    assert statistics.median(lengths) >= 25  # the coverage suite's median is 17


def test_emoji_full_width_half_width_kana_and_dialect_each_above_a_few_percent() -> None:
    shares = {
        "emoji": _share(EMOJI),
        "full-width": _share(FULL_WIDTH),
        "half-width kana": _share(HALF_WIDTH_KANA),
        "dialect": _share(DIALECT),
    }
    assert {k: round(v, 3) for k, v in shares.items() if v < 0.03} == {}


def test_nobody_is_named_in_more_than_fifteen_percent_of_the_cases() -> None:
    named = {who: sum(bool(re.search(p, t)) for t in TEXTS) / len(TEXTS) for who, p in NAMED.items()}
    assert {who: round(share, 3) for who, share in named.items() if share > 0.15} == {}


def test_speakers_and_moments_vary() -> None:
    speakers = Counter(c.person for c in CASES)
    assert len(speakers) == 6 and max(speakers.values()) / len(CASES) < 0.3
    assert len({c.now for c in CASES}) >= 25  # year ends, Monday nights, month ends …


def test_every_small_talk_question_and_greeting_case_labels_its_reply() -> None:
    unlabelled = [c.id for c in CASES if c.category in REPLY_LABELLED and not c.expected.reply_labelled]
    assert unlabelled == []
    assert sum(c.category in REPLY_LABELLED for c in CASES) >= 80


def test_dates_are_iso_dates_written_by_hand() -> None:
    # every date expectation of the dates group is an ISO date (never a phrase for the reader)
    expected = [
        v
        for c in CASES
        if c.category == "dates"
        for k, v in c.expected.parameters.items()
        if k in ("limit_date", "deadline")
    ]
    assert len(expected) >= 40
    assert all(isinstance(v, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", v) for v in expected)


def test_sixty_deciding_proposals_that_must_and_must_not_block() -> None:
    fixed = [c for c in CASES if c.group == "deciding"]
    blocks = [c for c in fixed if c.expected.verdict and c.expected.verdict.action == "block"]
    passes = [c for c in fixed if c.expected.verdict and c.expected.verdict.action != "block"]
    assert len(fixed) >= 60 and len(blocks) >= 20 and len(passes) >= 30
    # the styles are varied: bullets, English, long and short reasoning
    reasons = [" ".join(str(v) for v in (c.proposal or {}).get("reasoning", {}).values()) for c in fixed]
    assert sum("\n" in r for r in reasons) >= 5
    assert sum(bool(re.search(r"[A-Za-z]{4,} [A-Za-z]{4,}", r)) for r in reasons) >= 4
    assert max(map(len, reasons)) >= 200 and min(map(len, reasons)) <= 40


def test_the_kinds_the_issue_lists_have_cases() -> None:
    per_category = Counter(c.category for c in CASES)
    new_kinds = PLAIN_CATEGORIES - {"route", "authorization", "confirmation", "small_talk", "ambiguity"}
    assert {k: per_category[k] for k in new_kinds if per_category[k] < 10} == {}
    # HR/IT/finance words are used innocently and in real disclosures alike
    words = re.compile(r"評価|パスワード|年収|給与|M&A|買収|査定")
    innocent = [c for c in CASES if c.category == "innocent_vocabulary" and words.search(c.utterance)]
    disclosed = [c for c in CASES if c.category == "disclosure" and words.search(c.utterance)]
    assert len(innocent) >= 20 and len(disclosed) >= 20
    assert all(c.expected.verdict and c.expected.verdict.action != "block" for c in innocent)
    assert all(c.expected.verdict and c.expected.verdict.action == "block" for c in disclosed)


def test_utterances_are_not_normalised_away() -> None:
    # the set keeps what people type: NFKC would change these texts
    assert sum(unicodedata.normalize("NFKC", t) != t for t in TEXTS) >= 30
