"""Configuration as data: the brain's thresholds, the price table, the persona's prompt files."""

from __future__ import annotations

import json

import pytest

from shared_lib.brain.config import load_brain_config
from shared_lib.brain.fast_path import match, normalise
from shared_lib.errors import ConfigError
from shared_lib.persona.catalogue import Persona, load_persona
from shared_lib.ports import LLMUsage
from shared_lib.prices import PriceTable
from tests.conftest import configure_from_env

CFG = load_brain_config()


def test_given_the_price_table_when_costing_then_every_kind_of_token_has_its_price():
    table = PriceTable.load()
    usage = LLMUsage(
        input_tokens=1_000_000,
        output_tokens=1_000_000,
        cache_creation_input_tokens=1_000_000,
        cache_read_input_tokens=1_000_000,
    )
    assert table.cost("claude-haiku-4-5", usage) == pytest.approx(1.0 + 5.0 + 1.25 + 0.10)
    assert (
        table.cost("claude-opus-4-5", LLMUsage(cache_read_input_tokens=1_000_000)) == 0.5
    )  # seed §14: $0.50/M


def test_given_dated_or_unknown_model_ids_when_pricing_then_prefix_then_default():
    table = PriceTable.load()
    assert table.price("claude-sonnet-4-5-20250929") == table.per_million_tokens["claude-sonnet-4-5"]
    assert table.price("some-local-model") == table.default


def test_given_another_price_file_when_loading_then_it_is_used(tmp_path, monkeypatch):
    file = tmp_path / "prices.json"
    file.write_text(
        json.dumps(
            {
                "version": 1,
                "currency": "USD",
                "per_million_tokens": {},
                "default": {"input": 1, "output": 1, "cache_write": 1, "cache_read": 1},
            }
        )
    )
    monkeypatch.setenv("CHARTER_PRICES", str(file))
    configure_from_env()
    assert PriceTable.load().cost("x", LLMUsage(input_tokens=2_000_000)) == 2.0


def test_given_a_broken_brain_config_when_loading_then_a_config_error_names_the_field(tmp_path):
    raw = json.loads((load_brain_config.__globals__["CONFIG_FILE"]).read_text(encoding="utf-8"))
    raw["confidence_bands"] = list(reversed(raw["confidence_bands"]))
    file = tmp_path / "brain.json"
    file.write_text(json.dumps(raw))
    with pytest.raises(ConfigError, match="confidence_bands"):
        load_brain_config(str(file))


@pytest.mark.parametrize(
    "text, key",
    [
        ("おはよう", "fast_good_morning"),
        ("  おはようございます！！🐺", "fast_good_morning"),
        ("こんにちは〜", "fast_hello"),
        ("ありがとう。", "fast_thanks"),
        ("お疲れ様です!", "fast_otsukare"),
        # emoji written with a variation selector (☀️ is U+2600 U+FE0F) or as a keycap, either end
        ("おはようございます〜☀️", "fast_good_morning"),
        ("お疲れさまです☺️✌️", "fast_otsukare"),
        ("❤️ありがと❤️", "fast_thanks"),
        ("こんばんは🌙⭐️", "fast_good_evening"),
        ("よろしくお願いします🙇‍♂️", "fast_yoroshiku"),  # a ZWJ sequence
        ("ありがとうございます👍🏻", "fast_thanks"),  # a skin tone
        ("1️⃣こんにちは", None),  # a keycap digit is a digit: more than a greeting
    ],
)
def test_given_a_trivial_greeting_when_matched_then_the_persona_key(text, key):
    assert match(text, CFG) == key


@pytest.mark.parametrize("text", ["おはよう、田中さんにタスクをお願い", "ありがとう、でも違う", "", "🐺"])
def test_given_anything_more_than_a_greeting_when_matched_then_the_llm_is_needed(text):
    assert match(text, CFG) is None


def test_given_text_when_normalised_then_width_case_and_edges_are_folded():
    assert normalise("　ＯＫ！ ") == "ok"


def test_given_every_message_key_the_brain_uses_then_the_default_persona_has_it():
    persona = load_persona()
    keys = set(CFG.fast_path.patterns.values()) | {
        "degraded_store",
        "execution_not_done",
        "confirm_generated",
        "clarify_low_confidence",
        "legacy_smalltalk",
        "legacy_need_detail",
        "constitution_violation",
        "parse_error",
        "too_low_confidence",
        "rate_limit",
        "api_timeout",
        "llm_unavailable",
    }
    assert keys <= set(persona.messages)
    for which in ("instructions", "integration", "self_critique"):
        assert persona.prompt(which)


def test_given_a_persona_without_a_prompt_file_when_prompting_then_a_config_error(tmp_path):
    persona = Persona(
        name="x",
        language="ja",
        system_prompt_file="none.md",
        messages={},
        integration_file="missing.md",
        base_dir=str(tmp_path),
    )
    with pytest.raises(ConfigError, match=r"missing\.md"):
        persona.prompt("integration")


def test_given_the_error_catalogue_then_every_code_a_user_can_read_is_voiced_by_the_persona():
    from shared_lib.errors import CATALOGUE

    persona = load_persona()
    # send_error is the reply channel itself failing: nothing can reach the user
    unvoiced = [
        code
        for code, e in CATALOGUE.items()
        if not e.silent and code != "send_error" and not persona.has(code)
    ]
    assert unvoiced == []
    assert all(persona.message(code).endswith("🐺") for code in ("api_timeout", "rate_limit", "parse_error"))
