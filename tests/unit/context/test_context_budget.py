"""The token budget and its fixed truncation order (seed 004 §11)."""

from __future__ import annotations

import pytest

from shared_lib.context.budget import DEFAULT_DROP_ORDER, estimate_tokens, fit
from shared_lib.context.builder import ContextConfig
from shared_lib.context.render import Section, render
from shared_lib.context.sources import default_sources
from shared_lib.errors import ConfigError


def sections():
    return [
        Section("session", "【現在のセッション】", ["セッションモード: 通常"], droppable=False),
        Section("teachings", "【CEO教え】", ["- お客様第一"]),
        Section("persons", "【社内の人物】", [f"- 社員{i}" for i in range(5)]),
        Section(
            "recent_messages", "【直近の会話】", [f"- user: 発言{i}" for i in range(5)], oldest_first=True
        ),
        Section("summary", "【会話の要約】", ["先週は見積の話をした"]),
        Section("knowledge", "【関連する会社知識】", [f"- 規程{i}: " + "本文" * 20 for i in range(3)]),
        Section("datetime", "【現在日時】", ["2026年01月28日 12:00（日本時間）"], droppable=False),
    ]


def test_given_text_then_the_estimate_counts_japanese_characters_and_ascii_words():
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcdefgh") == 2
    assert estimate_tokens("見積書") == 3


def test_given_a_roomy_budget_then_nothing_is_dropped():
    fitted = fit(sections(), 10_000)
    assert fitted.dropped == {} and not fitted.over_budget
    assert fitted.tokens == estimate_tokens(fitted.rendered)


def test_given_a_tight_budget_then_knowledge_goes_first_then_the_summary():
    full = estimate_tokens(render(sections()))
    knowledge = estimate_tokens(render([s for s in sections() if s.name != "knowledge"]))
    fitted = fit(sections(), knowledge - 5)
    assert fitted.dropped["knowledge"] == 3 and fitted.dropped["summary"] == 1
    assert "persons" not in fitted.dropped and fitted.tokens <= knowledge - 5 < full


def test_given_an_even_tighter_budget_then_the_oldest_messages_go_before_people_and_teachings():
    fitted = fit(sections(), 90)
    kept = {s.name: s.lines for s in fitted.sections}
    assert fitted.dropped == {"knowledge": 3, "summary": 1, "recent_messages": 3}
    assert kept["recent_messages"] == ["- user: 発言3", "- user: 発言4"]  # the newest stay
    assert len(kept["persons"]) == 5 and kept["teachings"] == ["- お客様第一"]
    tighter = fit(sections(), 60)
    assert tighter.dropped == {"knowledge": 3, "summary": 1, "recent_messages": 5, "persons": 5}
    assert {s.name: s.lines for s in tighter.sections}["teachings"] == ["- お客様第一"]  # cut last


def test_given_a_budget_smaller_than_the_essentials_then_they_stay_and_it_says_so():
    fitted = fit(sections(), 5)
    kept = {s.name: s.lines for s in fitted.sections}
    assert kept["session"] and kept["datetime"] and fitted.over_budget
    assert all(not kept[n] for n in ("teachings", "persons", "recent_messages", "summary", "knowledge"))


def test_given_a_custom_drop_order_then_it_is_followed():
    fitted = fit(sections(), estimate_tokens(render(sections())) - 3, ("teachings", "knowledge"))
    assert list(fitted.dropped) == ["teachings"]


def test_given_the_default_order_then_it_follows_priority_then_truth_with_evidence_first():
    specs = {s.name: s for s in default_sources()}
    ranks = [(specs[n].priority, specs[n].truth) for n in DEFAULT_DROP_ORDER if n in specs]
    assert ranks == sorted(ranks, reverse=True)  # lower priority, then less trusted, goes first
    # seed 004 §11 exactly: the evidence (recalled episodes, then knowledge), the summary, the
    # agent state's open questions, then its plan; only then anything else
    assert DEFAULT_DROP_ORDER[:5] == ("episodes", "knowledge", "summary", "open_questions", "plan_brief")
    assert set(DEFAULT_DROP_ORDER) - set(specs) == {"open_questions", "plan_brief"}


def test_given_the_environment_then_the_config_is_read_and_checked():
    cfg = ContextConfig.from_env(
        {
            "CHARTER_CONTEXT_TOKEN_BUDGET": "900",
            "CHARTER_CONTEXT_DROP_ORDER": "summary, knowledge",
            "CHARTER_CONTEXT_SOURCE_TIMEOUT": "0.5",
        }
    )
    assert (cfg.token_budget, cfg.drop_order, cfg.source_timeout_seconds) == (
        900,
        ("summary", "knowledge"),
        0.5,
    )
    with pytest.raises(ConfigError):
        ContextConfig.from_env({"CHARTER_CONTEXT_DROP_ORDER": "session"})
    with pytest.raises(ConfigError):
        ContextConfig.from_env({"CHARTER_CONTEXT_TOKEN_BUDGET": "lots"})
