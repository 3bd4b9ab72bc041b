"""Japanese-aware terms and BM25."""

from shared_lib.memory.keyword import bm25, bucket, query_terms, terms


def test_kanji_runs_become_bigrams_and_a_lone_kanji_a_term():
    assert terms("経費精算") == ["経費", "費精", "精算"]
    assert terms("税の話") == ["税", "話"]


def test_scripts_are_split_so_a_particle_never_glues_onto_a_noun():
    # GIVEN a noun followed by particles and a katakana word
    got = terms("会議はオンラインで")
    # THEN the kanji, the katakana and the hiragana runs are read apart; a lone kana is dropped
    assert "議は" not in got and "会議" in got and "オン" in got and "イン" in got and "は" not in got


def test_nfkc_and_lower_case_unify_full_width_and_ascii_words():
    assert terms("ＳＬＡＣＫ ２０２６年") == ["slack", "2026", "年"]


def test_query_terms_are_distinct_in_order():
    assert query_terms("経費 経費 精算") == ["経費", "精算"]


def test_bm25_prefers_the_rare_term_and_the_short_document():
    common = bm25(["会社"], 10, {"会社": 1}, n_docs=100, avg_length=10, df={"会社": 90})
    rare = bm25(["精算"], 10, {"精算": 1}, n_docs=100, avg_length=10, df={"精算": 2})
    assert rare > common > 0
    short = bm25(["精算"], 5, {"精算": 1}, n_docs=100, avg_length=10, df={"精算": 2})
    assert short > rare
    assert bm25(["精算"], 5, {"経費": 1}, n_docs=100, avg_length=10) == 0


def test_bucket_is_stable_and_in_range():
    assert bucket("経費") == bucket("経費")
    assert {bucket(t) for t in terms("あいうえおかきくけこ経費精算会議")} <= set(range(32))
