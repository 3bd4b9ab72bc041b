"""split_text: parts within the limit (UTF-16 units), cut at the best boundary, never
inside a surrogate pair or an emoji sequence."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared_lib.channels import split_text


def utf16(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def test_short_text_is_one_part():
    assert split_text("  hello  ", 10) == ["hello"]
    assert split_text("", 10) == []
    assert split_text(" \n ", 10) == []


def test_paragraph_breaks_are_preferred():
    # GIVEN two paragraphs that do not fit together, with single line breaks inside
    first, second = "line one\nline two", "line three\nline four"
    # WHEN split THEN the cut is at the paragraph break
    assert split_text(f"{first}\n\n{second}", 25) == [first, second]


def test_line_breaks_come_before_words():
    assert split_text("alpha beta\ngamma delta", 15) == ["alpha beta", "gamma delta"]


def test_japanese_sentences_split_after_the_full_stop():
    assert split_text("今日は晴れです。明日は雨です。", 10) == ["今日は晴れです。", "明日は雨です。"]


def test_words_are_kept_whole_when_possible():
    assert split_text("one two three four five", 9) == ["one two", "three", "four five"]


def test_a_word_longer_than_the_limit_is_cut_between_characters():
    assert split_text("abcdefghij", 4) == ["abcd", "efgh", "ij"]


def test_surrogate_pairs_count_as_two_and_are_never_split():
    # GIVEN astral characters (2 UTF-16 units each) and a limit of 3 units
    parts = split_text("😀😀😀", 3)
    # THEN each part holds one of them: two would be 4 units
    assert parts == ["😀", "😀", "😀"]


@pytest.mark.parametrize("cluster", ["👨‍👩‍👧", "👍🏽", "🇯🇵", "é", "1️⃣"])
def test_emoji_sequences_and_combining_marks_stay_together(cluster):
    # GIVEN a run of one multi-code-point character cut at a limit inside it
    text = "x" + cluster * 6
    for limit in range(utf16(cluster) + 1, utf16(cluster) * 3):
        # THEN every part is a whole number of that character (after the leading x)
        for part in split_text(text, limit):
            assert part.lstrip("x").replace(cluster, "") == "", (limit, part)


def test_indentation_after_a_line_break_is_kept():
    assert split_text("aaaa\n    code", 8) == ["aaaa", "    code"]


def test_limit_must_hold_a_surrogate_pair():
    with pytest.raises(ValueError):
        split_text("abc", 1)


@settings(max_examples=200, deadline=None, database=None)
@given(text=st.text(st.characters(exclude_categories=["Cs"]), max_size=400), limit=st.integers(2, 60))
def test_parts_fit_and_keep_every_visible_character(text, limit):
    # GIVEN any text and limit WHEN split
    parts = split_text(text, limit)
    # THEN every part fits, no part is blank, and only whitespace was dropped at the cuts
    assert all(0 < utf16(p) <= limit for p in parts)
    assert all(p.strip() for p in parts)
    assert "".join("".join(parts).split()) == "".join(text.split())
