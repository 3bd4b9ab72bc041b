"""The guardian sees secrets the LLM arm only ever saw masked (issue 18's eval: ng-pattern-02/04/05).

The brain's LLM reads the user's message masked, so its parameters carry ``[CARD_1]`` where the
user wrote a card number, and the executor puts the real value back. A placeholder of a secret's
kind in parameters is therefore the secret itself to the guardian; elsewhere it is not.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import shared_lib
from shared_lib.policy.guardian import evaluate
from shared_lib.privacy.sanitizer import Sanitizer
from shared_lib.tools.registry import ToolRegistry
from tests.unit.policy.policy_fakes import NOW, config, text_answer, tool_call

EMPTY = ToolRegistry([])


@pytest.mark.parametrize(
    ("content", "pattern"),
    [
        ("クレジットカード [CARD_1] で決済", "credit_card"),
        ("APIキーは [API_KEY_1] です", "api_key"),
        ("トークン [TOKEN] を共有", "api_key"),
        ("マイナンバーは [ID_NUMBER_1]", "my_number"),
        ("暗証番号は [SECRET_2]", "password_disclosure"),
    ],
)
def test_a_masked_secret_in_parameters_is_blocked_as_the_secret_would_be(content, pattern):
    verdict = evaluate(tool_call("save_memory", {"content": content}), registry=EMPTY, now=NOW)
    assert (verdict.action, verdict.reason_code, verdict.details["pattern"]) == (
        "block",
        "security.ng_pattern",
        pattern,
    )


def test_the_value_it_stands_for_is_blocked_the_same_way():
    verdict = evaluate(
        tool_call("save_memory", {"content": "カード 4111 1111 1111 1111"}), registry=EMPTY, now=NOW
    )
    assert (verdict.reason_code, verdict.details["pattern"]) == ("security.ng_pattern", "credit_card")


@pytest.mark.parametrize(
    "content",
    ["電話は [PHONE_1] まで", "[EMAIL_1] に送って", "郵便番号 [POSTAL_1]", "[CARDS_1] と [XCARD_1]"],
)
def test_personal_data_that_is_no_secret_passes_masked(content):
    verdict = evaluate(tool_call("save_memory", {"content": content}), registry=EMPTY, now=NOW)
    assert verdict.reason_code != "security.ng_pattern"


def test_a_reply_naming_a_masked_secret_is_not_blocked_for_it():
    # a text reply sends nothing: the responder shows the placeholder in words
    verdict = evaluate(text_answer("カード番号（[CARD_1]）は記憶できないウル"), registry=EMPTY, now=NOW)
    assert verdict.reason_code != "security.ng_pattern"


def test_every_masked_label_the_policy_names_is_one_the_sanitizer_writes():
    labels = {
        r["label"]
        for r in json.loads(
            (Path(shared_lib.__file__).parent / "config" / "sanitizer_rules.json").read_text()
        )["rules"]
    }
    named = {label for p in config().security.ng_patterns for label in p.masked_as}
    assert named and named <= labels
    # and the sanitizer's secret labels are all covered by some pattern
    secrets = {"PRIVATE_KEY", "API_KEY", "TOKEN", "SECRET", "CARD", "ID_NUMBER"}
    assert secrets <= labels and secrets <= named
    assert Sanitizer.default().mask("4111 1111 1111 1111")[0].startswith("[CARD")
