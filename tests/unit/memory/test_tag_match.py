"""Finding a tag as people type it: variants, a compound's part, readings, typos, vectors,
ranked exact > normalised > containment > typo > vector; and the tags a sentence names."""

from __future__ import annotations

import pytest
from memory_fakes import NgramEmbedder

from shared_lib.memory.tag_match import (
    VECTOR_THRESHOLD,
    how_matched,
    loose_key,
    match_tags,
    one_edit,
    tags_in_text,
)


def masters(*names, **vectors):
    return [{"tag": n, **({"embedding": vectors[n]} if n in vectors else {})} for n in names]


@pytest.mark.parametrize(
    ("typed", "tag"),
    [
        ("けいひ", "経費"),
        ("ｹｲﾋ", "経費"),
        ("ケイヒ", "経費"),
        ("打ち合わせ", "打合せ"),
        ("打ち合せ", "打ち合わせ"),
        ("打合せ", "打ち合せ"),
        ("見積", "見積もり"),
        ("見積り", "見積もり"),
        ("ＰＣ", "パソコン"),
        ("pc", "PC"),
        ("ﾊﾟｿｺﾝ", "PC"),
        ("ソフトウェア", "ソフトウエア・"),
        ("Machine-Learning", "machine learning"),
        ("けいひせいさん", "経費精算"),
    ],
)
def test_variant_spellings_are_the_same_tag(typed, tag):
    # GIVEN a tag in the master WHEN someone types another spelling of it THEN it is normalised-equal
    assert how_matched(typed, tag) == ("normalised", 1.0)


@pytest.mark.parametrize(
    ("typed", "tag"),
    [
        ("経費", "経費精算"),
        ("精算", "経費精算"),
        ("経費精算", "経費"),
        ("見積", "見積書"),
        ("PC", "PC買い替え"),
    ],
)
def test_a_compound_and_its_part_match_by_containment(typed, tag):
    assert how_matched(typed, tag)[0] == "containment"


@pytest.mark.parametrize(
    ("typed", "tag"),
    [
        ("会議室", "会議費"),  # one kanji apart and two different things
        ("経費", "会費"),
        ("AI", "メール"),
        ("ai", "mail"),  # a Latin part counts only as a whole word
        ("経", "経費"),  # one character names nothing
        ("ミーティング", "打ち合わせ"),  # a synonym is the vector's, never the spelling's
    ],
)
def test_near_spellings_of_different_words_do_not_match(typed, tag):
    assert how_matched(typed, tag) is None


def test_a_typo_in_a_long_word_still_finds_it():
    assert how_matched("経費清算", "経費精算")[0] == "typo"
    assert how_matched("スラック連携", "スラック連係")[0] == "typo"
    assert one_edit("slak", "slack") and not one_edit("slack", "slack") and not one_edit("見積書", "請求書")


def test_ranking_is_exact_then_normalised_then_containment_then_typo_then_vector():
    # GIVEN a master with one tag per kind of match, and a vector near the query's
    emb = NgramEmbedder()
    query_vector = emb.embed(["経費"], kind="query")[0]
    docs = masters("経費精算", "けいひ", "経費", "経費清算書類", "交通費", 交通費=query_vector)
    docs[-1]["embedding"] = query_vector  # 交通費 as near as it gets (the vector side's)
    # WHEN 経費 is asked
    found = match_tags("経費", docs, query_vector=query_vector)
    # THEN each kind in its order
    assert [(m.tag, m.how) for m in found] == [
        ("経費", "exact"),
        ("けいひ", "normalised"),
        ("経費精算", "containment"),
        ("経費清算書類", "containment"),
        ("交通費", "vector"),
    ]
    assert found[2].score > found[3].score  # the closer compound first


def test_a_vector_below_the_threshold_or_of_another_model_is_not_a_match():
    far, near = [1.0, 0.0], [VECTOR_THRESHOLD - 0.05, (1 - (VECTOR_THRESHOLD - 0.05) ** 2) ** 0.5]
    docs = [
        {"tag": "ミーティング", "embedding": near, "embedding_model": "m"},
        {"tag": "会議", "embedding": far, "embedding_model": "other"},
    ]
    assert match_tags("打ち合わせ", docs, query_vector=far, model="m") == []


def test_a_tag_merged_away_is_not_offered():
    docs = [{"tag": "経費", "merged_into": "経費精算"}, {"tag": "経費精算"}]
    assert [m.tag for m in match_tags("経費", docs)] == ["経費精算"]


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("先月の経費の精算ってどうやるんだっけ？", {"経費", "経費精算"}),
        ("新しいＰＣまだ届かないんだけど😭", {"パソコン"}),
        ("ﾊﾟｿｺﾝ重すぎて仕事にならん", {"パソコン"}),
        ("けいひのしんせいってどこからやるの", {"経費"}),
        ("明日の打合せの資料どこ？", {"打ち合わせ"}),
        ("見積もり出した？", {"見積"}),
        ("メールの設定がわからない", set()),
        ("会議室の予約", set()),
    ],
)
def test_the_tags_a_sentence_names(sentence, expected):
    docs = masters("経費精算", "経費", "パソコン", "打ち合わせ", "見積", "AI", "会議費")
    assert {m.tag for m in tags_in_text(sentence, docs)} == expected


def test_loose_key_folds_okurigana_width_and_readings():
    assert {loose_key(w) for w in ("打ち合わせ", "打合せ", "打ち合せ", "うちあわせ")} == {"打合"}
    assert {loose_key(w) for w in ("見積", "見積もり", "見積り", "ミツモリ")} == {"見積"}
    assert {loose_key(w) for w in ("PC", "ＰＣ", "パソコン", "ﾊﾟｿｺﾝ")} == {"パソコン"}
