"""Property: a value of any category, typed any way — each character full-width or half-width,
any separator of the set between its groups, a zero-width or bidi character slipped inside —
in Japanese text with emoji, is masked whole: no digit of it (no letter of an address) is
left, and the text around the placeholder is exactly the text as typed (issue 33)."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared_lib.privacy.sanitizer import Sanitizer, unmask
from shared_lib.privacy.sanitizer_checks import luhn
from shared_lib.privacy.text_fold import fold

S = Sanitizer.default()
PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

SEPARATORS = ["-", "－", "ー", "‐", "−", "―", " ", "\u3000", ".", "．", "・", ""]
INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u202e", "\u202a", "\u2066", "\u2069"]
BEFORE = ["電話は", "連絡先：", "念のため🙏 ", "こちらに→", "「", "明日までに（", "メモ📝 "]
AFTER = ["です", " までお願いします！", "」", "）よろしく😊", "。", "\n以上です", " ね"]
DIGITS = st.sampled_from("0123456789")


def full_or_half(char: str) -> st.SearchStrategy[str]:
    """``char`` as typed: half-width, or its full-width form."""
    if "!" <= char <= "~":
        return st.sampled_from([char, chr(ord(char) + 0xFEE0)])
    return st.just(char)


@st.composite
def typed(draw: st.DrawFn, groups: list[str], *, separators: list[str] = SEPARATORS) -> str:
    """``groups`` joined by one separator, each character full- or half-width, maybe an
    invisible character inside."""
    sep = draw(st.sampled_from(separators))
    text = sep.join("".join(draw(full_or_half(c)) for c in group) for group in groups)
    if draw(st.booleans()):
        at = draw(st.integers(1, len(text) - 1))
        text = text[:at] + draw(st.sampled_from(INVISIBLE)) + text[at:]
    return text


def number(draw: st.DrawFn, n: int, first: str = "0123456789") -> str:
    return draw(st.sampled_from(first)) + "".join(draw(DIGITS) for _ in range(n - 1))


@st.composite
def phone(draw: st.DrawFn) -> tuple[str, str]:
    kind = draw(st.sampled_from(["mobile", "landline", "free", "intl"]))
    if kind == "mobile":
        groups = [draw(st.sampled_from(["090", "080", "070", "050"])), number(draw, 4), number(draw, 4)]
    elif kind == "landline":
        area = draw(st.sampled_from(["03", "06", "045", "011", "0466", "0996"]))
        groups = [area, number(draw, 6 - len(area), "123456789"), number(draw, 4)]
    elif kind == "free":
        groups = ["0120", number(draw, 3), number(draw, 3)]
    else:
        groups = ["+81", draw(st.sampled_from(["90", "80", "3"])), number(draw, 4), number(draw, 4)]
        return draw(typed(groups, separators=[" ", "-", "\u3000", "－"])), "PHONE"
    return draw(typed(groups)), "PHONE"


@st.composite
def card(draw: st.DrawFn) -> tuple[str, str]:
    body = number(draw, 15, "3456")
    check = next(d for d in "0123456789" if luhn(body + d))
    whole = body + check
    return draw(typed([whole[i : i + 4] for i in range(0, 16, 4)])), "CARD"


@st.composite
def my_number(draw: st.DrawFn) -> tuple[str, str]:
    return draw(typed([number(draw, 4) for _ in range(3)])), "ID_NUMBER"


@st.composite
def email(draw: st.DrawFn) -> tuple[str, str]:
    word = st.text("abcdefghijklmnopqrstuvwxyz", min_size=2, max_size=8)
    local = draw(word) + draw(st.sampled_from([".", "_", "+", ""])) + draw(word)
    domain = draw(word) + "." + draw(st.sampled_from(["com", "co.jp", "jp", "org"]))
    return draw(typed([local, domain], separators=["@"])), "EMAIL"


KEYS = {
    "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz012345": "API_KEY",
    "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx": "API_KEY",
    "AKIAIOSFODNN7EXAMPLE": "API_KEY",
    "AIzaSyA-1234567890abcdefghijklmnopqrstu": "API_KEY",
    "xoxb-1234567890-abcdefghijkl": "TOKEN",
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789": "TOKEN",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N": "TOKEN",
}


@st.composite
def key(draw: st.DrawFn) -> tuple[str, str]:
    value = draw(st.sampled_from(sorted(KEYS)))
    return draw(typed([value], separators=[""])), KEYS[value]


VALUES = st.one_of(phone(), card(), my_number(), email(), key())


@PROPERTY
@given(VALUES, st.sampled_from(BEFORE), st.sampled_from(AFTER))
def test_a_value_typed_any_way_is_masked_whole_and_only_it(value_label, before, after) -> None:
    # GIVEN a value of one category, typed some way, inside Japanese text with emoji
    value, label = value_label
    text = before + value + after
    # WHEN it is masked
    masked, vault = S.mask(text)
    # THEN the text is exactly the text around it with one placeholder of its category between
    assert masked == f"{before}[{label}_1]{after}", (text, masked)
    # AND nothing of the value survives in any form a reader could fold back to it
    rest = fold(masked.replace(f"[{label}_1]", "")).text
    assert not re.search(r"[\dA-Za-z]", rest)
    # AND the vault keeps the value exactly as typed
    assert vault == {f"[{label}_1]": value} and unmask(masked, vault) == text


@PROPERTY
@given(VALUES, st.sampled_from(BEFORE), st.sampled_from(AFTER))
def test_a_stored_value_typed_any_way_is_masked_too(value_label, before, after) -> None:
    value, label = value_label
    assert S.mask_stored({"text": before + value + after}) == {"text": f"{before}[{label}]{after}"}


@PROPERTY
@given(
    st.sampled_from(["振込先は普通 ", "口座番号：", "当座預金　", "普通預金", "Account No. "]),
    st.data(),
    st.sampled_from(AFTER),
)
def test_a_bank_account_typed_any_way_after_its_label_is_masked_whole(label, data, after) -> None:
    # GIVEN an account number after the word that says it is one, typed some way
    account = data.draw(st.from_regex(r"[0-9]{7}", fullmatch=True).flatmap(lambda d: typed([d])))
    text = "お疲れさまです🙇 " + label + account + after
    # WHEN it is masked
    masked = S.mask_text(text)
    # THEN the label stays, the number is a placeholder, and no digit of it is left
    assert masked == f"お疲れさまです🙇 {label}[BANK_ACCOUNT_1]{after}", (text, masked)
