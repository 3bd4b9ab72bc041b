"""The persona extension at rest (seed 001 §16.2 拡張SOUL): allowed keys only, judged per key,
applied once per turn, masked; the core can never be changed through it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import ValidationError

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.features.persona_learning.store import apply_turn, ext_path, load_ext
from shared_lib.persona.core import load_core
from shared_lib.persona.ext import TEACH_MIN_LEVEL, check, core_keys, merged_view
from shared_lib.turn.envelope import StepRecord, Turn, UserInfo
from shared_lib.turn.inbound import InboundMessage
from shared_lib.turn.proposal import Proposal

NOW = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
CORE = load_core()


def proposal(*updates: dict[str, Any]) -> Proposal:
    return Proposal.model_validate(
        {
            "output_type": "text_response",
            "reasoning": {"intent_understanding": "好みを教わった", "no_tool_reason": "覚えるだけ"},
            "confidence": {"overall": 0.9},
            "text_response": "覚えたウル🐺",
            "persona_update": list(updates),
        }
    )


def make_turn(*updates: dict[str, Any], level: int = 5, shadow: bool = False, turn_id: str = "t-1") -> Turn:
    msg = InboundMessage(
        channel="http", org_id="acme", room_id="r1", user_id="u1", text="覚えて",
        message_id=f"m-{turn_id}", event_id=f"e-{turn_id}", received_at=NOW,
    )  # fmt: skip
    turn = Turn.from_inbound(msg)
    turn.turn_id, turn.shadow = turn_id, shadow
    turn.context.user = UserInfo(user_id="u1", level=level)
    turn.proposal.proposal = proposal(*updates)
    return turn


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        ("tone.sentence_endings", ["です"], "core_key"),
        ("tone.emoji_usage", False, "core_key"),
        ("constraints.never_do", [], "core_key"),
        ("boundaries.max_message_length", 5000, "core_key"),
        ("persona.name", "カイロ", "core_key"),
        ("first_person", "俺", "core_key"),  # a field of the core, without its section
        ("context_overrides.announcement.sentence_endings", ["です"], "core_key"),
        ("context_overrides.discord_public.formality", "formal", "not_allowed"),  # a context code never picks
        ("dynamic_traits.curiosity_level", 0.9, "not_allowed"),
        ("dynamic_traits.verbosity", 1.5, "invalid"),
        ("dynamic_traits.humor_frequency", True, "invalid"),
        ("learned_preferences.communication_style_notes", "あ" * 201, "invalid"),
        ("learned_preferences.favorite_topics", ["話題"] * 11, "invalid"),
        ("custom_rules", "x" * 101, "invalid"),
        ("context_overrides.announcement.formality", "very_formal", "invalid"),
        ("custom_rules", "遅れた人には「しなさい」と言う", "core_conflict"),
        ("custom_rules", "朝の挨拶では天気に触れる", None),
        ("dynamic_traits.verbosity", 0.3, None),
        ("context_overrides.announcement.emoji_usage", False, None),
    ],
)
def test_each_key_is_judged_against_the_allowed_keys_and_the_core(key, value, reason):
    assert check(key, value, CORE) == reason


def test_every_section_and_field_of_the_core_is_a_core_key():
    for name in core_keys(CORE):
        assert check(name, "x", CORE) == "core_key", name
        assert check(f"{name}.anything", "x", CORE) == "core_key", name


def test_a_proposal_applies_its_allowed_keys_once_masked_and_never_a_core_key():
    store = MemoryStore()
    # GIVEN a turn that teaches a rule, a note with a phone number, and tries the core
    turn = make_turn(
        {"key": "custom_rules", "value": "朝の挨拶では天気に触れる"},
        {"key": "learned_preferences.communication_style_notes", "value": "急ぎは090-1234-5678へ電話"},
        {"key": "tone.sentence_endings", "value": ["です"]},
    )
    # WHEN it is applied, then redelivered
    first = apply_turn(store, turn, CORE, now=NOW)
    again = apply_turn(store, turn, CORE, now=NOW)
    # THEN the allowed keys are applied (masked at rest), the core key refused, nothing twice
    assert [c.key for c in first.applied] == ["custom_rules", "learned_preferences.communication_style_notes"]
    assert [(c.key, c.reason) for c in first.refused] == [("tone.sentence_endings", "core_key")]
    assert again == first
    ext = load_ext(store, "acme")
    assert ext["custom_rules"] == ["朝の挨拶では天気に触れる"]
    assert "090-1234-5678" not in str(store.get(ext_path("acme")))
    assert ext["learned_preferences"]["communication_style_notes"] == "急ぎは[PHONE]へ電話"
    # AND the merged view's core is the core's, whatever the document holds
    store.set(ext_path("acme"), {**store.get(ext_path("acme")), "tone": {"sentence_endings": ["です"]}})  # type: ignore[dict-item]
    view = merged_view(CORE, load_ext(store, "acme"))
    assert view["tone"]["sentence_endings"] == ["ウル"] and "tone" not in view["extension"]


def test_a_second_turn_appends_and_a_full_list_is_refused():
    store = MemoryStore()
    for i in range(10):
        apply_turn(
            store, make_turn({"key": "custom_rules", "value": f"ルール{i}"}, turn_id=f"t-{i}"), CORE, now=NOW
        )
    full = apply_turn(
        store, make_turn({"key": "custom_rules", "value": "ルール10"}, turn_id="t-10"), CORE, now=NOW
    )
    assert [(c.key, c.reason) for c in full.refused] == [("custom_rules", "invalid")]
    assert len(load_ext(store, "acme")["custom_rules"]) == 10


@pytest.mark.parametrize(
    ("changes", "dry_run", "reason"),
    [({}, True, "shadow"), ({"level": TEACH_MIN_LEVEL - 1}, False, "level")],
)
def test_a_shadow_turn_or_a_junior_person_writes_nothing(changes, dry_run, reason):
    # a shadow candidate's turn is applied as a dry run (the stage table's ``shadow.dry_run`` step)
    store = MemoryStore()
    section = apply_turn(
        store,
        make_turn({"key": "custom_rules", "value": "朝は天気"}, **changes),
        CORE,
        now=NOW,
        dry_run=dry_run,
    )
    assert [c.reason for c in section.refused] == [reason] and section.applied == []
    assert store.get(ext_path("acme")) is None


def test_a_secret_is_refused_and_never_stored():
    store = MemoryStore()
    key = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz"
    section = apply_turn(store, make_turn({"key": "custom_rules", "value": f"鍵は {key}"}), CORE, now=NOW)
    assert [c.reason for c in section.refused] == ["secret"]
    assert key not in str(section.model_dump()) and store.get(ext_path("acme")) is None


def test_a_proposal_with_more_than_three_updates_is_a_bad_proposal():
    with pytest.raises(ValidationError):
        proposal(*({"key": "custom_rules", "value": f"r{i}"} for i in range(4)))


def test_a_resumed_step_of_the_state_arm_is_not_applied_again():
    store = MemoryStore()
    turn = make_turn()
    turn.proposal.proposal = None
    turn.proposal.arm = "state"
    turn.loop.steps = [
        StepRecord(
            step=0, turn_id="t-0", arm="llm", proposal=proposal({"key": "custom_rules", "value": "前の発言"})
        )
    ]
    assert apply_turn(store, turn, CORE, now=NOW).applied == []
