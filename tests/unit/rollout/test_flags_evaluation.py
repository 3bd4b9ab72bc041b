"""Evaluation: the precedence of the rules, overrides and their expiry, the fail-safe, the cache."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from rollout_fakes import write_flags

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.flags import (
    FLAGS_DOC,
    MAX_CACHE_SECONDS,
    OVERRIDE_DOC,
    FlagsDocument,
    FlagsOverride,
    FlagsProvider,
    bucket_fine,
    evaluate,
    flags_store_doc,
    seed_flags,
)
from shared_lib.rollout.overrides import write_org_override, write_override

NOW = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
SALT = "test-salt"


def doc(**changes) -> FlagsDocument:
    return FlagsDocument.model_validate({"version": "v1", "bucket_salt": SALT, **changes})


def override(**changes) -> FlagsOverride:
    return FlagsOverride.model_validate(
        {"expires_at": NOW + timedelta(hours=1), "author": "ops", "reason": "test", **changes}
    )


def person_in_bucket(low: float, high: float, org: str = "acme") -> str:
    return next(f"u{i}" for i in range(100_000) if low <= bucket_fine(SALT, org, f"u{i}") < high)


@pytest.mark.parametrize(
    ("flags", "ovr", "user", "arm", "reason"),
    [
        (
            {"kill_switch": True, "brain_mode": "llm", "allowlist": ["u1"]},
            None,
            "u1",
            "legacy",
            "KILL_SWITCH",
        ),
        ({"brain_mode": "llm"}, {"kill_switch": True}, "u1", "legacy", "KILL_SWITCH"),
        ({"brain_mode": "llm", "allowlist": ["u1"]}, {"brain_mode": "legacy"}, "u1", "legacy", "OVERRIDE"),
        (
            {"brain_mode": "llm", "org_modes": {"acme": "llm"}, "denylist": ["u1"]},
            None,
            "u1",
            "legacy",
            "DENYLIST",
        ),
        ({"brain_mode": "llm", "denylist": ["acme/u1"]}, {"brain_mode": "llm"}, "u1", "legacy", "DENYLIST"),
        ({"brain_mode": "legacy", "allowlist": ["acme/u1"]}, None, "u1", "llm", "ALLOWLIST"),
        ({"brain_mode": "legacy"}, {"brain_mode": "llm"}, "u1", "llm", "OVERRIDE"),
        ({"brain_mode": "legacy", "org_modes": {"acme": "llm"}}, None, "u1", "llm", "ORG_MODE"),
        ({"brain_mode": "llm", "org_modes": {"acme": "legacy"}}, None, "u1", "legacy", "ORG_MODE"),
        ({"brain_mode": "canary", "canary_percent": 100}, None, "u1", "llm", "SPLIT"),
        ({"brain_mode": "canary", "canary_percent": 0}, None, "u1", "legacy", "SPLIT"),
        ({"brain_mode": "llm"}, None, "u1", "llm", "DEFAULT"),
        ({"brain_mode": "shadow"}, None, "u1", "legacy", "DEFAULT"),
    ],
)
def test_given_flags_when_a_person_is_evaluated_then_the_first_matching_rule_decides(
    flags, ovr, user, arm, reason
):
    section = evaluate(doc(**flags), "acme", user, override=override(**ovr) if ovr else None, now=NOW)
    assert (section.arm, section.reason) == (arm, reason)
    assert section.flags_version == "v1"


def test_given_the_kill_switch_when_evaluated_then_the_turn_is_marked_for_the_fixed_message():
    section = evaluate(doc(kill_switch=True), "acme", "u1", now=NOW)
    assert section.kill_switch is True and section.shadow_candidate_arm is None


def test_given_an_expired_override_when_evaluated_then_the_file_decides_again():
    expired = override(brain_mode="legacy").model_copy(update={"expires_at": NOW - timedelta(seconds=1)})
    assert evaluate(doc(brain_mode="llm"), "acme", "u1", override=expired, now=NOW).reason == "DEFAULT"


def test_given_an_override_lifting_the_kill_switch_when_active_then_it_wins_over_the_file():
    section = evaluate(
        doc(kill_switch=True, brain_mode="llm"), "acme", "u1", override=override(kill_switch=False), now=NOW
    )
    assert (section.arm, section.reason) == ("llm", "DEFAULT")


def test_given_shadow_mode_when_sampling_is_0_or_100_then_nobody_or_everybody_gets_a_candidate():
    people = [f"u{i}" for i in range(200)]
    none = [
        evaluate(doc(brain_mode="shadow", shadow_sample_percent=0), "acme", u).shadow_candidate_arm
        for u in people
    ]
    every = [
        evaluate(doc(brain_mode="shadow", shadow_sample_percent=100), "acme", u).shadow_candidate_arm
        for u in people
    ]
    assert set(none) == {None} and set(every) == {"llm"}


def test_given_canary_when_a_person_is_in_the_legacy_share_then_a_candidate_is_sampled_but_not_in_the_llm_share():
    flags = doc(brain_mode="canary", canary_percent=50, shadow_sample_percent=100)
    in_llm = evaluate(flags, "acme", person_in_bucket(0, 50))
    in_legacy = evaluate(flags, "acme", person_in_bucket(50, 100))
    assert (in_llm.arm, in_llm.shadow_candidate_arm) == ("llm", None)
    assert (in_legacy.arm, in_legacy.shadow_candidate_arm) == ("legacy", "llm")


def test_given_a_denylisted_person_in_shadow_mode_when_evaluated_then_no_candidate_runs_for_them():
    section = evaluate(doc(brain_mode="shadow", denylist=["u1"]), "acme", "u1")
    assert (section.reason, section.shadow_candidate_arm) == ("DENYLIST", None)


# --------------------------------------------------------------------------- fail-safe


def test_given_no_document_when_evaluated_then_legacy_error_and_an_alert():
    # GIVEN a store without config/flags and no fallback file
    store = MemoryStore()
    provider = FlagsProvider(store, ttl_seconds=0)
    # WHEN a person is evaluated
    section, error = provider.evaluate("acme", "u1", NOW)
    # THEN legacy, reason ERROR, no candidate, and an alert document was written
    assert (section.arm, section.reason, section.shadow_candidate_arm) == ("legacy", "ERROR", None)
    assert "missing" in error
    alerts = store.query("alerts")
    assert [a["code"] for _, a in alerts] == ["flags_unusable"]


def test_given_an_invalid_document_when_evaluated_then_legacy_error_naming_the_field():
    store = MemoryStore()
    store.set(FLAGS_DOC, {"document_json": '{"version": "v1", "canary_percent": 400}', "version": "v1"})
    alerts: list[tuple[str, str]] = []
    provider = FlagsProvider(store, ttl_seconds=0, on_error=lambda code, msg: alerts.append((code, msg)))
    section, error = provider.evaluate("acme", "u1", NOW)
    assert section.reason == "ERROR" and "canary_percent" in error
    assert alerts and alerts[0][0] == "flags_unusable"


def test_given_an_unreachable_store_when_evaluated_then_legacy_error():
    store = MemoryStore()
    seed_flags(store)
    store.fail_reads = True
    section, error = FlagsProvider(store, ttl_seconds=0, on_error=lambda c, m: None).evaluate(
        "acme", "u1", NOW
    )
    assert section.reason == "ERROR" and "unreadable" in error


def test_given_a_broken_override_when_evaluated_then_legacy_error_rather_than_ignoring_a_rollback():
    store = MemoryStore()
    store.set(FLAGS_DOC, flags_store_doc(doc(brain_mode="llm")))
    store.set(OVERRIDE_DOC, {"brain_mode": "legacy", "author": "guard"})  # no expiry, no reason
    section, error = FlagsProvider(store, ttl_seconds=0, on_error=lambda c, m: None).evaluate(
        "acme", "u1", NOW
    )
    assert section.reason == "ERROR" and "override" in error


def test_given_no_document_but_a_fallback_file_when_evaluated_then_the_file_is_used(tmp_path):
    path = write_flags(tmp_path / "flags.json", brain_mode="llm")
    provider = FlagsProvider(MemoryStore(), ttl_seconds=0, fallback_file=path)
    section, error = provider.evaluate("acme", "u1", NOW)
    assert (section.arm, error) == ("llm", "")
    assert provider.snapshot().source == f"file:{path}"


# --------------------------------------------------------------------------- cache


def test_given_a_cached_document_when_the_store_changes_then_the_change_shows_after_the_ttl(ticker):
    # GIVEN a provider with a 10 s cache that has read the document
    store = MemoryStore()
    store.set(FLAGS_DOC, flags_store_doc(doc(brain_mode="llm", version="v1")))
    provider = FlagsProvider(store, ttl_seconds=10, monotonic=ticker)
    assert provider.evaluate("acme", "u1", NOW)[0].flags_version == "v1"
    # WHEN the document changes
    store.set(FLAGS_DOC, flags_store_doc(doc(brain_mode="llm", version="v2", kill_switch=True)))
    # THEN within the TTL the cached version still answers, and after it the new one does
    ticker.advance(9.9)
    assert provider.evaluate("acme", "u1", NOW)[0].flags_version == "v1"
    ticker.advance(0.2)
    section = provider.evaluate("acme", "u1", NOW)[0]
    assert (section.flags_version, section.reason) == ("v2", "KILL_SWITCH")


def test_given_a_long_ttl_when_the_provider_is_built_then_the_cache_is_capped_at_30_seconds():
    assert FlagsProvider(MemoryStore(), ttl_seconds=600).ttl == MAX_CACHE_SECONDS == 30


def test_given_an_override_written_when_the_cache_expires_then_it_applies(ticker):
    store = MemoryStore()
    store.set(FLAGS_DOC, flags_store_doc(doc(brain_mode="llm")))
    provider = FlagsProvider(store, ttl_seconds=5, monotonic=ticker)
    assert provider.evaluate("acme", "u1", NOW)[0].arm == "llm"
    write_override(store, brain_mode="legacy", ttl=timedelta(hours=1), author="ops", reason="drill", now=NOW)
    ticker.advance(5)
    section = provider.evaluate("acme", "u1", NOW)[0]
    assert (section.arm, section.reason) == ("legacy", "OVERRIDE")
    # and once it expires, the file decides again
    later = NOW + timedelta(hours=1, seconds=1)
    assert provider.evaluate("acme", "u1", later)[0].reason == "DEFAULT"


def rollback(org: str, *, expires_in: timedelta = timedelta(hours=2)) -> dict:
    return {org: {"expires_at": NOW + expires_in, "author": "rollback-guard", "reason": "llm errors"}}


@pytest.mark.parametrize(
    ("flags", "ovr", "org", "user", "arm", "reason"),
    [
        # the rolled-back organisation goes to legacy, whatever the file or the lists say
        ({"brain_mode": "llm"}, {"orgs": rollback("acme")}, "acme", "u1", "legacy", "ORG_OVERRIDE"),
        (
            {"brain_mode": "llm", "allowlist": ["u1"]},
            {"orgs": rollback("acme")},
            "acme",
            "u1",
            "legacy",
            "ORG_OVERRIDE",
        ),
        (
            {"brain_mode": "legacy", "org_modes": {"acme": "llm"}},
            {"orgs": rollback("acme")},
            "acme",
            "u1",
            "legacy",
            "ORG_OVERRIDE",
        ),
        # the others keep their arm
        ({"brain_mode": "llm"}, {"orgs": rollback("acme")}, "beta", "u1", "llm", "DEFAULT"),
        (
            {"brain_mode": "canary", "canary_percent": 100},
            {"orgs": rollback("acme")},
            "beta",
            "u1",
            "llm",
            "SPLIT",
        ),
        # an expired rollback no longer applies; the kill switch and a global rollback still come first
        (
            {"brain_mode": "llm"},
            {"orgs": rollback("acme", expires_in=-timedelta(minutes=1))},
            "acme",
            "u1",
            "llm",
            "DEFAULT",
        ),
        (
            {"brain_mode": "llm"},
            {"kill_switch": True, "orgs": rollback("acme")},
            "acme",
            "u1",
            "legacy",
            "KILL_SWITCH",
        ),
        (
            {"brain_mode": "llm"},
            {"brain_mode": "legacy", "orgs": rollback("acme")},
            "beta",
            "u1",
            "legacy",
            "OVERRIDE",
        ),
    ],
)
def test_given_an_organisation_rollback_when_evaluated_then_only_that_organisation_goes_to_legacy(
    flags, ovr, org, user, arm, reason
):
    section = evaluate(doc(**flags), org, user, override=override(**ovr), now=NOW)
    assert (section.arm, section.reason) == (arm, reason)


def test_given_an_organisation_rollback_that_outlives_the_global_part_when_evaluated_then_it_still_applies():
    # GIVEN a global part that expired an hour ago, and acme's rollback still running
    ovr = override(expires_at=NOW - timedelta(hours=1), brain_mode="legacy", orgs=rollback("acme"))
    assert evaluate(doc(brain_mode="llm"), "acme", "u1", override=ovr, now=NOW).reason == "ORG_OVERRIDE"
    assert evaluate(doc(brain_mode="llm"), "beta", "u1", override=ovr, now=NOW).reason == "DEFAULT"


def test_given_a_live_organisation_rollback_when_the_provider_evaluates_then_it_applies(ticker):
    store = MemoryStore()
    store.set(FLAGS_DOC, flags_store_doc(doc(brain_mode="llm")))
    write_org_override(
        store, "acme", ttl=timedelta(hours=1), author="rollback-guard", reason="errors", now=NOW
    )
    provider = FlagsProvider(store, ttl_seconds=0, monotonic=ticker)
    assert provider.evaluate("acme", "u1", NOW)[0].reason == "ORG_OVERRIDE"
    assert provider.evaluate("beta", "u1", NOW)[0].arm == "llm"
