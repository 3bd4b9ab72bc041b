"""The sender's rhythm (seed 001 §7.3 v0.4, ``features.debounce.state_pace``): the window is the
median gap × 1.5 within the bounds, the channel's default until a rhythm shows, and a gap of a
new conversation is not rhythm."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.features.debounce import state_pace as pace
from shared_lib.settings import Settings

MONDAY_NIGHT = datetime(2026, 11, 23, 13, 40, tzinfo=UTC)  # 22:40 JST
DEFAULT, LOW, HIGH = 2.0, 0.8, 5.0
PATH = pace.pace_path("acme", "k" * 40)


def window(gaps: list[float]) -> float:
    return pace.rhythm_window(gaps, default=DEFAULT, low=LOW, high=HIGH)


def stamps(*seconds: float) -> list[datetime]:
    return [MONDAY_NIGHT + timedelta(seconds=s) for s in seconds]


@given(
    gaps=st.lists(st.floats(min_value=0.0, max_value=7200.0, allow_nan=False), max_size=40),
    low=st.floats(min_value=0.0, max_value=5.0),
    high=st.floats(min_value=0.0, max_value=5.0),
    default=st.floats(min_value=0.0, max_value=5.0),
)
def test_the_window_is_always_within_the_bounds_or_the_default(gaps, low, high, default):
    got = pace.rhythm_window(gaps, default=default, low=low, high=high)
    usable = [g for g in gaps if g <= pace.RHYTHM_GAP_LIMIT.total_seconds()]
    if len(usable) < pace.MIN_GAPS:
        assert got == default
    else:
        assert min(low, high) <= got <= high


def test_given_a_person_who_splits_requests_with_three_second_pauses_then_their_window_outlasts_the_pause():
    # GIVEN 「田中さんに明日までに」…3 s…「見積書作成のタスクをお願い」, a few times over the evening,
    # with long silences between requests
    times = stamps(0, 3.1, 600, 602.8, 1500, 1503.4, 1504.0, 2400, 2403.0)
    # THEN the window is longer than their pause (the median of their short gaps × 1.5)
    got = window(pace.gaps(times))
    assert got > 3.4 and got <= HIGH


def test_given_someone_typing_one_message_an_hour_then_they_keep_the_channels_default():
    times = stamps(*(3600 * h for h in range(12)))
    assert window(pace.gaps(times)) == DEFAULT


def test_given_a_fast_typist_firing_short_lines_then_the_window_shrinks_to_the_floor():
    # 「おつです」「あ、あと」「明日の件」「よろ🙏」: half a second apart, every burst
    times = stamps(0, 0.4, 0.9, 1.3, 300, 300.5, 300.9)
    assert window(pace.gaps(times)) == LOW


def test_given_two_gaps_only_then_the_default_stands_and_a_third_makes_a_rhythm():
    assert window([3.0, 3.0]) == DEFAULT
    assert window([3.0, 3.0, 3.0]) == 4.5


def test_a_gap_of_a_new_conversation_is_not_rhythm_and_a_same_second_gap_is():
    # three pauses of a few seconds, and the night's long silences, which would otherwise raise
    # the median to the ceiling
    assert window([2.0, 2.0, 2.0, 3000.0, 4000.0, 5000.0, 6000.0]) == 3.0
    # ChatWork stamps a second: two lines typed within it are a gap of 0
    assert window([0.0, 0.0, 0.0, 1.0]) == LOW


def test_a_long_median_is_capped_at_the_ceiling():
    assert window([20.0, 25.0, 40.0, 55.0]) == HIGH


def test_the_history_keeps_the_last_twenty_gaps_in_order_and_each_time_once():
    old = stamps(*range(0, 60, 2))  # 30 messages
    kept = pace.merged(old, stamps(58, 61))  # a redelivered claim brings 58 again
    assert len(kept) == pace.WINDOW_SIZE + 1 and kept == sorted(set(kept))
    assert kept[-1] == MONDAY_NIGHT + timedelta(seconds=61)
    assert len(pace.gaps(kept)) == pace.WINDOW_SIZE


def test_the_pace_document_holds_times_only_and_expires():
    store = MemoryStore()
    doc = pace.folded(None, stamps(0, 3), MONDAY_NIGHT)
    store.set(PATH, doc)
    assert set(doc) == {"times", "updated_at", "expires_at"}
    assert doc["expires_at"] == MONDAY_NIGHT + pace.PACE_KEEP
    doc = pace.folded(store.get(PATH), stamps(6, 9), MONDAY_NIGHT)
    store.set(PATH, doc)
    assert pace.window_for(store, PATH, default=DEFAULT, low=LOW, high=HIGH) == 4.5


def test_the_bounds_are_settings_with_the_seeds_values():
    s = Settings.from_env({"CHARTER_ENV": "test"})
    assert (s.debounce_min_seconds, s.debounce_max_seconds) == (0.8, 5.0)
    t = Settings.from_env({"CHARTER_ENV": "test", "CHARTER_DEBOUNCE_MAX_SECONDS": "4"})
    assert t.debounce_max_seconds == 4.0
