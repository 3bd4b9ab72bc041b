"""The sanitizer: rules as data (seed 002 §7, seed 003 security), consistent and reversible placeholders."""

from __future__ import annotations

import json
import re

import pytest

from shared_lib.privacy.sanitizer import RULES_FILE, Sanitizer, unmask
from tests.conftest import configure_from_env

S = Sanitizer.default()

SECRETS = {
    "anthropic key": "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz012345",
    "openai key": "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx",
    "aws key": "AKIAIOSFODNN7EXAMPLE",
    "google key": "AIzaSyA-1234567890abcdefghijklmnopqrstu",
    "slack token": "xoxb-1234567890-abcdefghijkl",
    "github token": "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
    "email": "taro.yamada+work@example.co.jp",
    "mobile": "090-1234-5678",
    "landline": "03-1234-5678",
    "international": "+81 90 1234 5678",
    "card": "4111 1111 1111 1111",
    "my number": "1234 5678 9012",
}


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_given_a_secret_in_japanese_text_when_masked_then_it_is_gone_and_restorable(kind):
    # GIVEN
    text = f"これは{SECRETS[kind]}です。よろしく"
    # WHEN
    masked, vault = S.mask(text)
    # THEN
    assert SECRETS[kind] not in masked and masked.startswith("これは[") and masked.endswith("]です。よろしく")
    assert unmask(masked, vault) == text


@pytest.mark.parametrize(
    "text, expected",
    [
        ("password: hunter2", "password: [SECRET_1]"),
        ("パスワードは「abc123」です", "パスワードは「[SECRET_1]」です"),
        ("api_key=abcd1234efgh", "api_key=[SECRET_1]"),
        ("Authorization: Bearer abcdefghijklmnopqrstuvwxyz", "Authorization: Bearer [TOKEN_1]"),
        ("https://bob:s3cr3t@db.example.com/app", "https://bob:[SECRET_1]@db.example.com/app"),
        ("〒150-0001 東京都", "[POSTAL_1] 東京都"),
    ],
)
def test_given_a_labelled_secret_when_masked_then_only_the_value_is_masked(text, expected):
    assert S.mask_text(text) == expected


@pytest.mark.parametrize(
    "text", ["2026-01-31 までに", "10:30 から会議", "100000円の見積書", "第3四半期", "ID t-1234"]
)
def test_given_ordinary_business_text_when_masked_then_it_is_unchanged(text):
    assert S.mask_text(text) == text


def test_given_a_key_inside_an_assignment_when_masked_then_no_placeholder_nests_another():
    masked, vault = S.mask("api_key=sk-ant-api03-abcdefghijklmnop")
    assert masked == "api_key=[API_KEY_1]" and all("[" not in v for v in vault.values())


def test_given_the_same_value_twice_when_masked_then_it_has_the_same_placeholder():
    masked, vault = S.mask("a@example.com と b@example.com と a@example.com")
    assert masked == "[EMAIL_1] と [EMAIL_2] と [EMAIL_1]" and len(vault) == 2


def test_given_an_existing_vault_when_masking_more_text_then_numbering_continues():
    vault: dict[str, str] = {}
    S.mask("a@example.com", vault)
    masked, _ = S.mask("b@example.com と a@example.com", vault)
    assert masked == "[EMAIL_2] と [EMAIL_1]"


def test_given_a_nested_structure_when_masked_then_every_string_shares_one_vault():
    vault: dict[str, str] = {}
    out = S.mask_obj({"to": ["a@example.com"], "cc": {"x": "a@example.com"}, "n": 3, "ok": True}, vault)
    assert out == {"to": ["[EMAIL_1]"], "cc": {"x": "[EMAIL_1]"}, "n": 3, "ok": True} and len(vault) == 1


def test_given_text_already_masked_when_masked_again_then_it_is_unchanged():
    once = S.mask_text("token: abcdefgh12345678 と a@example.com")
    assert S.mask_text(once) == once


def test_given_unknown_placeholders_when_unmasking_then_they_stay_masked():
    assert unmask("[EMAIL_1] [EMAIL_9] [email_1]", {"[EMAIL_1]": "a@b.jp"}) == "a@b.jp [EMAIL_9] [email_1]"


def test_given_another_rules_file_when_loading_then_it_replaces_the_default(tmp_path, monkeypatch):
    file = tmp_path / "rules.json"
    file.write_text(
        json.dumps({"version": 1, "rules": [{"name": "code", "label": "CODE", "pattern": "X-\\d+"}]})
    )
    monkeypatch.setenv("CHARTER_SANITIZER_RULES", str(file))
    configure_from_env()
    assert Sanitizer.default().mask_text("X-42 と a@example.com") == "[CODE_1] と a@example.com"


def test_given_the_packaged_rules_then_every_pattern_compiles_and_names_are_unique():
    data = json.loads(RULES_FILE.read_text(encoding="utf-8"))
    names = [r["name"] for r in data["rules"]]
    assert len(names) == len(set(names)) and len(Sanitizer.from_file(RULES_FILE).rules) == len(names)


# -- at rest and in replies ---------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_given_a_secret_when_stored_then_an_unnumbered_placeholder_takes_its_place(kind):
    stored = S.mask_stored(f"これは{SECRETS[kind]}です")
    assert SECRETS[kind] not in stored and re.fullmatch(r"これは\[[A-Z_]+\]です", stored)
    assert S.mask_stored(stored) == stored  # idempotent: a stored text stored again is unchanged


def test_given_a_document_when_stored_then_identifiers_are_kept_and_text_is_masked():
    # GIVEN ids that look like phone numbers (a LINE user id, a hex id) beside free text
    doc = {
        "content": "電話は 090-1234-5678",
        "user_id": "U0123456789abcdef0123456789abcdef",
        "created_by": "U0312345678f",
        "recipients": ["U09012345678"],
        "marker": "c0901234567a",
        "nested": [{"note": "a@example.com", "task_ids": ["t-09012345678"]}],
    }
    # THEN only the free text is masked
    assert S.mask_stored(doc) == {
        **doc,
        "content": "電話は [PHONE]",
        "nested": [{"note": "[EMAIL]", "task_ids": ["t-09012345678"]}],
    }


def test_given_a_reply_then_only_the_recipients_own_values_come_back_and_the_rest_is_words():
    own = "私のメールは taro@example.com です"
    reply = "[EMAIL_1] に送ります。[EMAIL_2] と [PHONE] と [PHONE_1] は表示しません"
    assert S.present(reply, own=own, language="ja") == (
        "taro@example.com に送ります。（メールアドレス・非表示） と （電話番号・非表示） と "
        "（電話番号・非表示） は表示しません"
    )
    assert S.present("call [PHONE_1]", own="", language="en") == "call (phone number, hidden)"


def test_given_a_placeholder_cut_by_a_length_limit_then_it_is_words_too():
    assert S.present("番号は [ID_…」", own="", language="ja") == "番号は （個人番号・非表示）…」"
    assert S.present("end [PHONE_", own="", language="ja") == "end （電話番号・非表示）"
    assert S.present("[TODO…] と [A…", own="", language="ja") == "[TODO…] と [A…"


def test_given_ordinary_brackets_in_a_reply_then_they_are_left_alone():
    text = "[info]会議[/info] [To:123] [EMAIL_1 [DRAFT]"
    assert S.present(text, own="", language="ja") == text


def test_given_the_packaged_rules_then_every_label_has_japanese_and_english_words():
    wording = Sanitizer.from_file(RULES_FILE).wording
    assert {r.label for r in S.rules} <= set(wording)
    assert all(set(words) == {"ja", "en"} for words in wording.values())


@pytest.mark.parametrize(
    "text", ["03-1234-5678", "090-1234-5678", "09012345678", "0120-123-456", "06 6123 4567", "0312345678"]
)
def test_a_japanese_phone_number_of_ten_or_eleven_digits_is_masked(text):
    assert Sanitizer.default().mask(f"電話は{text}まで")[0] == "電話は[PHONE_1]まで"


@pytest.mark.parametrize("text", ["K083632の見積書", "注文番号0123456", "内線012-3456", "伝票0812"])
def test_a_short_number_starting_with_zero_is_no_phone_number(text):
    # an order number or a tag would otherwise be masked, stored as [PHONE] and lost to the user
    assert Sanitizer.default().mask(text)[0] == text


def test_mask_stored_keeps_an_embedding_a_vector():
    # GIVEN a document holding an embedding (memory chunks, issue 20)
    from shared_lib.ports import Vector

    doc = Sanitizer.default().mask_stored({"text": "090-1234-5678", "embedding": Vector((0.6, 0.8))})
    # THEN the text is masked and the vector stays a Vector (a list would not be a vector value)
    assert doc["text"] != "090-1234-5678" and isinstance(doc["embedding"], Vector)


def test_the_memo_of_clean_texts_holds_no_value_and_changes_no_answer():
    # GIVEN a sanitizer of its own, and the short texts a turn's log lines repeat
    s = Sanitizer.from_file(RULES_FILE)
    clean = ["layer_done", "flags.DEFAULT", "おはようございます！🐺", "confidence.medium"]
    secrets = ["090-1234-5678", "taro@example.com", "０８０－２７１８－２８１８"]
    # WHEN each is masked twice
    first = [s.mask_text(t) for t in clean + secrets]
    again = [s.mask_text(t) for t in clean + secrets]
    # THEN the answers are the same, the clean texts are remembered and no value is
    assert first == again and first[: len(clean)] == clean
    assert set(clean) <= s._clean and not set(secrets) & s._clean
    assert all("[" in m for m in first[len(clean) :])
    # AND a remembered text inside a longer one is still read whole
    assert s.mask_text("layer_done 090-1234-5678") == "layer_done [PHONE_1]"


def test_a_long_clean_prompt_is_read_by_the_rules_once_and_a_long_text_with_a_value_every_time(monkeypatch):
    """The Base system prompt goes into every LLM call the call log masks: a long clean text is
    remembered by its digest (the most recent ``CLEAN_DIGESTS``), a long one holding a value never."""
    from shared_lib.privacy import sanitizer as module

    s = Sanitizer.from_file(RULES_FILE)
    reads: list[int] = []
    fold = module.fold

    def counting(text):
        reads.append(len(text))
        return fold(text)

    base = (
        "あなたは「ソウルくん」です。語尾は「ウル」🐺。\n"
        + "【指示】丁寧に、短く答える。期限は「11月30日（月）」のように書く。\n" * 120
    )
    with_value = base + "連絡先: 090-1234-5678（田中）、メール taro.yamada@example.co.jp"
    monkeypatch.setattr(module, "fold", counting)
    masked = [s.mask_text(t) for t in (base, with_value, base, with_value, base)]
    assert masked[0] == masked[2] == masked[4] == base
    assert masked[1] == masked[3] and "090-1234-5678" not in masked[1] and "[EMAIL_1]" in masked[1]
    assert reads.count(len(base)) == 1 and reads.count(len(with_value)) == 2

    # AND the memo keeps the most recently used: the Base, used again, outlives newer one-off texts
    def one_off(i: int) -> str:
        return s.mask_text(f"（{i}件目の会話の文脈）" + "今日もよろしくお願いします。" * 6)

    for i in range(module.CLEAN_DIGESTS - 1):  # the memo full, the Base its oldest entry
        one_off(i)
    s.mask_text(base)
    for i in range(module.CLEAN_DIGESTS, module.CLEAN_DIGESTS + 10):
        one_off(i)
    assert len(s._clean_long) == module.CLEAN_DIGESTS
    reads.clear()
    s.mask_text(base)
    assert reads == []
