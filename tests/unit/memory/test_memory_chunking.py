"""Chunks of about 400 tokens with 80 of overlap, cut at sentence ends."""

from shared_lib.memory.chunking import chunk_text, estimate_tokens


def test_a_short_text_is_one_chunk_and_a_blank_one_none():
    assert chunk_text("  経費は月末までに申請する。 ") == ["経費は月末までに申請する。"]
    assert chunk_text(" \n ") == []


def test_chunks_stay_within_the_budget_and_cut_at_sentence_ends():
    # GIVEN 60 Japanese sentences of 20 characters (1 200 tokens counted conservatively)
    text = "".join(f"第{i:02d}条、社員は毎日の報告を必ず提出すること。" for i in range(60))
    chunks = chunk_text(text)
    # THEN every chunk fits 400 tokens and ends on a sentence end
    assert len(chunks) >= 3
    assert all(estimate_tokens(c) <= 400 for c in chunks)
    assert all(c.endswith("。") for c in chunks)


def test_the_next_chunk_starts_with_the_overlap_of_the_previous():
    text = "".join(f"文{i:03d}はここで終わる。" for i in range(200))
    a, b = chunk_text(text)[:2]
    shared = next(n for n in range(len(b), 0, -1) if a.endswith(b[:n]))  # the longest overlap
    assert 40 < estimate_tokens(b[:shared]) <= 80
    assert b[:shared].endswith("。")


def test_english_counts_four_characters_a_token():
    assert estimate_tokens("abcd" * 10) == 10
    assert len(chunk_text("word. " * 1000)) == 4  # 1 500 tokens: 400 each with overlap
