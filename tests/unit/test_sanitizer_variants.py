"""The sanitizer reads values however they are typed (issue 33): full-width digits and symbols,
Japanese dashes, dotted and spaced numbers, an ideographic space, a zero-width or bidi character
inside the value — and it masks the span as typed, leaving the rest of the text as the user
wrote it. It never takes an id for a phone number."""

from __future__ import annotations

import random
import re
import string
import uuid

import pytest

from shared_lib.privacy.sanitizer import Rule, Sanitizer, unmask
from shared_lib.privacy.text_fold import fold, strip_invisible

S = Sanitizer.default()

TYPED = {
    # how people (and an adversarial run) really type them, the value between 「」
    "full-width mobile": ("新しい携帯は「０８０－２７１８－２８１８」です", "PHONE"),
    "mobile with 長音 dashes": ("けいたい：０９０ー３３４５ー６７８９ でお願いします🙏", "PHONE"),
    "mobile with minus signs": ("090−1234−5678（夜は出られません）", "PHONE"),
    "mobile with horizontal bars": ("連絡は080―4455―6677へ", "PHONE"),
    "dotted mobile": ("携帯070.1618.0339まで", "PHONE"),
    "spaced mobile": ("電話 090 1234 5678 です", "PHONE"),
    "ideographic spaces": ("でんわ０９０　８８７７　６６５５にお願い", "PHONE"),
    "katakana middle dots": ("連絡先は090・2468・1357です", "PHONE"),
    "landline in brackets": ("本社（０３）３２１４－９８７６まで", "PHONE"),
    "landline, bracketed exchange": ("大阪は06(6341)2345です", "PHONE"),
    "free dial": ("0120-444-555 に問い合わせて", "PHONE"),
    "plus eighty-one": ("海外からは ＋８１ ９０－８７６５－４３２１ へ", "PHONE"),
    "plus eighty-one, trunk zero": ("+81 (0)3 5555 1234 が代表", "PHONE"),
    "US number": ("NYオフィス +1 (415) 555-2671 に", "PHONE"),
    "glued to TEL": ("TEL0312345678 FAX0312345679", "PHONE"),
    "zero-width inside": ("メモ：090\u200b-3141-\u200d5926 の件", "PHONE"),
    "bidi override inside": ("番号は0\u202e90-2222-3333\u202cです", "PHONE"),
    "kanji digits": ("電話は〇九〇ー一二三四ー五六七八です", "PHONE"),
    "keycap emoji digits": ("0️⃣8️⃣0️⃣1️⃣2️⃣3️⃣4️⃣5️⃣6️⃣7️⃣8️⃣ にかけて", "PHONE"),
    "full-width at sign": ("メールは hanako.sato＠example.com です", "EMAIL"),
    "full-width address": ("ｈａｎａｋｏ＿ｓ＠ｅｘａｍｐｌｅ．ｃｏ．ｊｐ へ送って", "EMAIL"),
    "spaced at sign": ("taro.y @ example.co.jp に", "EMAIL"),
    "card, full-width with ideographic spaces": ("カード５５５５　５５５５　５５５５　４４４４で", "CARD"),
    "card with hyphens": ("法人カード 4111-1111-1111-1111 の明細", "CARD"),
    "card, American Express grouping": ("アメックス 3782 822463 10005 です", "CARD"),
    "card followed by its expiry": ("カード 4242 4242 4242 4242 12/28 です", "CARD"),
    "my number, full-width": ("マイナンバーは１２３４－５６７８－９０１２です", "ID_NUMBER"),
    "my number with spaces": ("個人番号 2345 6789 0123 を控えて", "ID_NUMBER"),
    "bank account": ("振込先は普通 ７６５４３２１ です", "BANK_ACCOUNT"),
    "bank account number": ("口座番号：1234567（三菱UFJ 渋谷支店）", "BANK_ACCOUNT"),
    "japan post account": ("ゆうちょ 記号 12340 番号 12345671 へ", "BANK_ACCOUNT"),
    "postal code, full-width": ("〒１５０－０００１ 東京都渋谷区", "POSTAL"),
}


def digits(text: str) -> str:
    return "".join(ch for ch in fold(text).text if ch.isdigit())


@pytest.mark.parametrize("kind", sorted(TYPED))
def test_a_value_typed_any_way_is_masked_and_the_rest_stays_as_typed(kind: str) -> None:
    # GIVEN a message with a value typed full-width, dotted, split or spaced
    text, label = TYPED[kind]
    # WHEN it is masked
    masked, vault = S.mask(text)
    # THEN the value is a placeholder of its category, nothing of it is left
    placeholders = re.findall(r"\[([A-Z_]+)_\d+\]", masked)
    assert placeholders and set(placeholders) == {label}, masked
    leftover = re.sub(r"\[[A-Z_]+_\d+\]", "", masked)
    if label == "EMAIL":
        assert "example" not in fold(leftover).text.lower(), masked
    else:
        assert not re.search(r"\d{3}", re.sub(r"[^\d]", "", fold(leftover).text.replace("12/28", ""))), masked
    # AND the text around it is the user's, character for character, and the vault gives it back
    assert unmask(masked, vault) == text


@pytest.mark.parametrize(
    "text",
    [
        "2026-11-27 に締め切り",
        "１１月２７日（金）１０：３０から",
        "見積は1,234,567円、税込1,358,023円",
        "バージョン 3.14.159 をデプロイ",
        "注文番号 ORD-20261127-0312345678 の件",
        "ジョブ job_0901234567890 が失敗",
        "タスク t-cce0312345678 を完了にして",
        "請求書No.0312345678-A を確認",
        "普通に1234567円かかった",
        "内線012-3456",
        "伝票0812と0901234567",  # ten digits from 090: no Japanese number is shaped like that
        "カード 4111-1111-1111-1112 は番号違い",  # fails the Luhn check
    ],
)
def test_numbers_that_are_not_values_are_left_alone(text: str) -> None:
    assert S.mask_text(text) == text


def _ids(rng: random.Random) -> list[str]:
    hexdigits = "0123456789abcdef"
    crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
    ids: list[str] = []
    for _ in range(800):
        ids.append(uuid.UUID(int=rng.getrandbits(128), version=4).hex)
        ids.append(str(uuid.UUID(int=rng.getrandbits(128), version=4)))
        ids.append("t-" + "".join(rng.choice(hexdigits) for _ in range(12)))
        ids.append("".join(rng.choice(crockford) for _ in range(26)))  # a ULID
        ids.append("".join(rng.choice(hexdigits) for _ in range(rng.choice((7, 12, 40)))))  # sha1
        ids.append(f"job_{rng.randrange(10**12, 10**14)}")
        ids.append(f"ORD-{rng.randrange(20200101, 20301231)}-{rng.randrange(10**9, 10**10):010d}")
        ids.append("U" + "".join(rng.choice(hexdigits) for _ in range(32)))  # a LINE user id
    return ids


def test_thousands_of_generated_ids_are_never_masked() -> None:
    # GIVEN ids of every kind the product and its providers make (seeded: the same every run)
    ids = _ids(random.Random(33))
    # WHEN each is masked alone and inside a sentence (a hex prefix that drew only digits is a
    # bare number, which no rule can tell from a My Number: it has no letter, prefix or dash)
    shaped = [i for i in ids if not i.isdigit()]
    masked = [i for i in shaped if S.mask_text(i) != i or S.mask_text(f"ID {i} を確認") != f"ID {i} を確認"]
    # THEN none is
    assert len(shaped) > 6300 and masked == []


def test_the_id_generator_would_show_a_phone_rule_that_ignores_boundaries() -> None:
    # GIVEN the old phone rule, which matched digits glued to letters
    old = Sanitizer([Rule(name="p", label="PHONE", pattern=r"(?<![\d\-])0\d{9,10}(?![\d\-])")])
    # THEN some generated hex id would have been masked: the test above can fail
    assert any(old.mask_text(i) != i for i in _ids(random.Random(33)))


def test_every_real_phone_shape_is_masked() -> None:
    rng = random.Random(81)
    shapes = [("090", 4, 4), ("080", 4, 4), ("070", 4, 4), ("050", 4, 4), ("03", 4, 4), ("06", 4, 4)]
    shapes += [("011", 3, 4), ("092", 3, 4), ("0466", 2, 4), ("01267", 1, 4), ("0120", 3, 3), ("0800", 3, 4)]
    for area, exchange, line in shapes:
        for sep in ("-", "", " ", ".", "－", "ー", "　"):
            head = str(rng.randrange(1, 10)) + "".join(str(rng.randrange(10)) for _ in range(exchange - 1))
            number = sep.join([area, head, "".join(str(rng.randrange(10)) for _ in range(line))])
            assert S.mask_text(f"電話は{number}です") == "電話は[PHONE_1]です", number


def test_stored_text_folds_too_and_stays_idempotent() -> None:
    stored = S.mask_stored({"content": "携帯は０８０－２７１８－２８１８", "user_id": "t-cce0312345678"})
    assert stored == {"content": "携帯は[PHONE]", "user_id": "t-cce0312345678"}
    assert S.mask_stored(stored) == stored


def test_invisible_characters_go_but_an_emoji_keeps_its_joiner() -> None:
    family, flag = "👨\u200d👩\u200d👧", "🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f"
    text = f"\u202e承認\u202c\u2066して\u2069{family}{flag}\u200bね\ufeff"
    assert strip_invisible(text) == f"承認して{family}{flag}ね"
    assert strip_invisible(string.printable) == string.printable
