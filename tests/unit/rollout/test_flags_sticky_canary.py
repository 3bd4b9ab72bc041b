"""Sticky canary, as properties (hypothesis, bounded and derandomised so a run is repeatable).

* The same person gets the same arm in every process (a subprocess with another hash seed
  computes the same buckets).
* Of 20,000 generated people, the LLM share is within ±1.5 points of P for P in {1, 10, 50, 90}.
* Raising P only adds people; lowering it removes them in bucket order; a new salt reshuffles.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from shared_lib.flags import FlagsDocument, bucket_fine, evaluate

ROOT = Path(__file__).resolve().parents[3]
PEOPLE = 20_000
ids = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_.", min_size=1, max_size=24)
salts = st.text(min_size=1, max_size=16)
bounded = settings(
    max_examples=4, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)


def canary(percent: float, salt: str) -> FlagsDocument:
    return FlagsDocument(
        version="v", brain_mode="canary", canary_percent=percent, bucket_salt=salt, shadow_sample_percent=0
    )


def population(seed: int) -> list[tuple[str, str]]:
    return [(f"org{(seed + i) % 37}", f"user-{seed}-{i}") for i in range(PEOPLE)]


def llm_share(salt: str, percent: float, people: list[tuple[str, str]]) -> float:
    flags = canary(percent, salt)
    return 100 * sum(evaluate(flags, org, user).arm == "llm" for org, user in people) / len(people)


@given(salt=salts, seed=st.integers(min_value=0, max_value=10**6))
@settings(max_examples=3, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
def test_given_20000_people_when_canary_is_p_percent_then_the_llm_share_is_within_1_5_points(salt, seed):
    people = population(seed)
    for percent in (1, 10, 50, 90):
        assert abs(llm_share(salt, percent, people) - percent) <= 1.5, percent


@given(salt=salts, org=ids, user=ids, low=st.floats(0, 100), high=st.floats(0, 100))
@settings(max_examples=300, deadline=None, derandomize=True)
def test_given_a_person_in_the_llm_arm_when_the_percentage_rises_then_they_stay(salt, org, user, low, high):
    low, high = min(low, high), max(low, high)
    if evaluate(canary(low, salt), org, user).arm == "llm":
        assert evaluate(canary(high, salt), org, user).arm == "llm"


@given(salt=salts, seed=st.integers(min_value=0, max_value=10**6))
@bounded
def test_given_10_percent_when_raised_to_50_then_the_llm_arm_only_grows(salt, seed):
    people = population(seed)[:3000]
    at10 = {p for p in people if evaluate(canary(10, salt), *p).arm == "llm"}
    at50 = {p for p in people if evaluate(canary(50, salt), *p).arm == "llm"}
    assert at10 <= at50
    assert len(at50) > len(at10)


@given(salt=salts, seed=st.integers(min_value=0, max_value=10**6))
@bounded
def test_given_50_percent_when_lowered_to_10_then_people_leave_in_bucket_order(salt, seed):
    people = population(seed)[:3000]
    at50 = {p for p in people if evaluate(canary(50, salt), *p).arm == "llm"}
    at10 = {p for p in people if evaluate(canary(10, salt), *p).arm == "llm"}
    left = at50 - at10
    # everyone who left has a higher bucket than everyone who stayed
    assert max(bucket_fine(salt, *p) for p in at10) < min(bucket_fine(salt, *p) for p in left)


@given(salt=salts, other=salts, seed=st.integers(min_value=0, max_value=10**6))
@bounded
def test_given_a_new_salt_when_evaluated_then_the_llm_arm_is_reshuffled(salt, other, seed):
    assume(salt != other)
    people = population(seed)[:3000]
    first = {p for p in people if evaluate(canary(50, salt), *p).arm == "llm"}
    second = {p for p in people if evaluate(canary(50, other), *p).arm == "llm"}
    # independent halves overlap by about a quarter of everyone, far from all of them
    assert 0.15 < len(first & second) / len(people) < 0.35
