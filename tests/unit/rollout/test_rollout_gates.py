"""The promotion gates over a store, and ``charter gate shadow|canary|promotion``.

The store is handed in through the parsed arguments (``args.store``); the Firestore emulator
path is tests/integration/test_gates_emulator.py. Evidence is written with the product's
record and comparison models (``gate_fakes``).
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from gate_fakes import ORG, seed_comparisons, seed_records
from rollout_fakes import write_flags

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.cli import build_parser
from shared_lib.flags import seed_flags
from shared_lib.ids import utc_now
from shared_lib.rollout.gates import CanaryCriteria, canary_gate, promotion_step, shadow_gate, turn_failed
from shared_lib.rollout.report import PromotionCriteria

HOUR_AGO = timedelta(hours=1)


def run(argv: list[str], store: MemoryStore | None) -> int:
    args = build_parser().parse_args(argv)
    args.store = store
    return int(args.func(args))


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore()


def window() -> dict:
    now = utc_now()
    return {"since": now - timedelta(hours=24), "until": now}


# --------------------------------------------------------------------------- the canary gate


def test_an_llm_arm_as_good_as_legacy_passes_the_canary_gate(store):
    # GIVEN a day of canary traffic: the LLM arm fast enough, no failures, a few cents a turn
    seed_records(store, utc_now() - HOUR_AGO, 30, arm="llm", duration_ms=3000, cost_usd=0.04)
    seed_records(store, utc_now() - HOUR_AGO, 60, arm="legacy", duration_ms=400, cost_usd=0.0)
    # WHEN the canary gate judges the window
    result = canary_gate(store, **window())
    # THEN it passes with each arm's figures
    assert (result.outcome, result.exit_code) == ("pass", 0)
    assert result.figures["llm"]["turns"] == 30 and result.figures["legacy"]["turns"] == 60
    assert (
        result.figures["llm"]["latency_p95_ms"] == 3000 and result.figures["llm"]["cost_per_turn_usd"] == 0.04
    )


@pytest.mark.parametrize(
    ("llm_fields", "failing"),
    [
        ({"failed_share": 4}, ["error_rate", "error_rate_delta"]),  # 4 of 30 failed: 13 %, legacy 0 %
        ({"duration_ms": 12_000}, ["latency_p95_ms"]),
        ({"cost_usd": 0.5}, ["cost_delta_usd"]),
        ({"count": 5}, ["samples"]),
    ],
)
def test_an_llm_arm_worse_than_the_bar_fails_the_canary_gate_naming_the_check(store, llm_fields, failing):
    # GIVEN canary traffic with one thing wrong with the LLM arm
    at = utc_now() - HOUR_AGO
    count = llm_fields.pop("count", 30)
    failed = llm_fields.pop("failed_share", 0)
    seed_records(store, at, failed, arm="llm", failed=True)
    seed_records(store, at, count - failed, arm="llm", **llm_fields)
    seed_records(store, at, 40, arm="legacy", duration_ms=400, cost_usd=0.0)
    # WHEN judged
    result = canary_gate(store, **window())
    # THEN it fails, naming exactly those checks with their figures and bars
    assert (result.outcome, result.exit_code) == ("fail", 1)
    assert [c["name"] for c in result.failed] == failing
    assert all(name in result.message for name in failing) and "required" in result.message


def test_an_error_rate_under_the_bar_and_no_worse_than_legacy_passes_and_the_delta_bar_is_its_own(store):
    # GIVEN both arms failing 1 in 25 (4 %): under the 5 % bar and no worse than legacy
    at = utc_now() - HOUR_AGO
    for arm in ("llm", "legacy"):
        seed_records(store, at, 1, arm=arm, failed=True)
        seed_records(store, at, 24, arm=arm)
    result = canary_gate(store, **window())
    checks = {c["name"]: c for c in result.checks}
    assert checks["error_rate"]["actual"] == 0.04 and checks["error_rate_delta"]["actual"] == 0.0
    assert result.outcome == "pass"
    # WHEN the bar on the delta is stricter than nothing at all THEN a worse LLM arm fails it
    seed_records(store, at, 1, arm="llm", failed=True)
    stricter = canary_gate(
        store, criteria=CanaryCriteria(max_error_rate=0.5, max_error_rate_delta=0.0), **window()
    )
    assert [c["name"] for c in stricter.failed] == ["error_rate_delta"]


@pytest.mark.parametrize(("arm", "missing"), [("legacy", "no llm-arm turns"), ("llm", "no legacy-arm turns")])
def test_the_canary_gate_without_one_arm_in_the_window_has_no_data(store, arm, missing):
    seed_records(store, utc_now() - HOUR_AGO, 30, arm=arm)
    result = canary_gate(store, **window())
    assert (result.outcome, result.exit_code) == ("no_data", 2)
    assert missing in result.message and "cannot pass without data" in result.message


def test_records_outside_the_window_or_of_another_org_are_not_evidence(store):
    seed_records(store, utc_now() - timedelta(days=3), 30, arm="llm")
    seed_records(store, utc_now() - HOUR_AGO, 30, arm="legacy")
    seed_records(store, utc_now() - HOUR_AGO, 30, arm="llm", org="other")
    assert canary_gate(store, org=ORG, **window()).outcome == "no_data"
    assert canary_gate(store, **window()).outcome == "pass"


def test_a_user_error_is_not_a_failed_turn_but_an_error_reply_is():
    from gate_fakes import record

    from shared_lib.observability.records import ErrorRow

    ok = record(utc_now())
    user = ok.model_copy(
        update={
            "errors": [ErrorRow(code="x", category="user_error", severity="low", layer="brain", message="m")]
        }
    )
    assert not turn_failed(ok) and not turn_failed(user)
    assert turn_failed(ok.model_copy(update={"response_kind": "error"}))


# --------------------------------------------------------------------------- the shadow gate


def test_enough_agreeing_comparisons_pass_the_shadow_gate(store):
    seed_comparisons(store, utc_now() - HOUR_AGO, 200)
    result = shadow_gate(store, **window())
    assert (result.outcome, result.exit_code) == ("pass", 0)
    assert result.figures["samples"] == 200 and result.figures["agreement"]["tool"] == 1.0


def test_too_little_tool_agreement_fails_the_shadow_gate_with_the_reports_check(store):
    seed_comparisons(store, utc_now() - HOUR_AGO, 200, disagree=20)  # 90 % < 95 %
    result = shadow_gate(store, **window())
    assert result.outcome == "fail"
    assert [c["name"] for c in result.failed] == ["tool_agreement"]
    assert "tool_agreement 0.9 (required >= 0.95)" in result.message


def test_the_shadow_gate_uses_the_reports_promotion_criteria(store):
    seed_comparisons(store, utc_now() - HOUR_AGO, 50)
    assert [c["name"] for c in shadow_gate(store, **window()).failed] == ["samples"]
    assert shadow_gate(store, criteria=PromotionCriteria(min_samples=50), **window()).outcome == "pass"


def test_the_shadow_gate_without_comparisons_has_no_data(store):
    seed_comparisons(store, utc_now() - timedelta(days=10), 300)
    result = shadow_gate(store, **window())
    assert (result.outcome, result.exit_code) == ("no_data", 2)
    assert result.message.startswith("no shadow comparisons since ")
    assert result.message.endswith(": the gate cannot pass without data")


# --------------------------------------------------------------------------- the commands


def test_charter_gate_canary_exits_0_on_pass_and_prints_the_checks(store, capsys):
    seed_records(store, utc_now() - HOUR_AGO, 25, arm="llm")
    seed_records(store, utc_now() - HOUR_AGO, 25, arm="legacy")
    assert run(["gate", "canary", "--since", "24h"], store) == 0
    out = capsys.readouterr().out
    assert "[PASS]" in out and "[ok] latency_p95_ms: 1200.0 (required <= 10000)" in out


def test_charter_gate_canary_json_exits_1_naming_the_failed_check(store, capsys):
    seed_records(store, utc_now() - HOUR_AGO, 25, arm="llm", duration_ms=15_000)
    seed_records(store, utc_now() - HOUR_AGO, 25, arm="legacy")
    assert run(["gate", "canary", "--json"], store) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["outcome"] == "fail"
    assert [c["name"] for c in data["checks"] if not c["ok"]] == ["latency_p95_ms"]


def test_charter_gate_shadow_without_data_exits_2_saying_so(store, capsys):
    assert run(["gate", "shadow", "--since", "24h"], store) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err.startswith("charter: error: no shadow comparisons since ") and "cannot pass without data" in err
    )


def test_charter_gate_without_a_store_exits_2_in_one_line(capsys, monkeypatch, tmp_path):
    # GIVEN no store configured anywhere (no settings, no .charter/ left by the stack or demo)
    monkeypatch.setenv("CHARTER_HOME", str(tmp_path / "nothing"))
    assert run(["gate", "canary"], None) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no store configured" in err


# --------------------------------------------------------------------------- which gate a promotion needs


def test_promotion_steps_are_gated_one_stage_at_a_time():
    from shared_lib.flags import FlagsDocument

    def doc(mode: str, percent: int = 0) -> FlagsDocument:
        return FlagsDocument(version="v", brain_mode=mode, canary_percent=percent)

    steps = {
        (live, committed): promotion_step("prod", doc(*committed), doc(*live) if live else None)
        for live, committed in [
            (None, ("shadow",)),
            (("shadow",), ("canary", 10)),
            (("canary", 10), ("canary", 50)),
            (("canary", 50), ("llm",)),
            (("llm",), ("shadow",)),
            (("canary", 10), ("canary", 10)),
            (("shadow",), ("llm",)),
        ]
    }
    summary = {k: (s.gate, bool(s.refused)) for k, s in steps.items()}
    assert summary == {
        (None, ("shadow",)): (None, False),
        (("shadow",), ("canary", 10)): ("shadow", False),
        (("canary", 10), ("canary", 50)): ("canary", False),
        (("canary", 50), ("llm",)): ("canary", False),
        (("llm",), ("shadow",)): (None, False),
        (("canary", 10), ("canary", 10)): (None, False),
        (("shadow",), ("llm",)): (None, True),
    }
    assert "skips canary-10, canary-50" in steps[(("shadow",), ("llm",))].refused


def live(store: MemoryStore, tmp_path: Path, **fields: object) -> None:
    seed_flags(store, write_flags(tmp_path / "live.json", **fields))


def test_gate_promotion_of_a_committed_shadow_file_needs_no_gate(store, capsys):
    # GIVEN the committed prod file (shadow) WHEN the pipeline's gate runs THEN no gate is needed
    assert run(["gate", "promotion", "--env", "prod"], store) == 0
    assert (
        "prod.json is at shadow, which serves the LLM arm to no one: no gate needed"
        in capsys.readouterr().out
    )


def test_gate_promotion_of_a_file_already_live_needs_no_gate(store, tmp_path, capsys):
    live(store, tmp_path, brain_mode="llm", canary_percent=0)
    assert run(["gate", "promotion", "--env", "dev"], store) == 0
    assert "no promotion (llm -> llm): no gate needed" in capsys.readouterr().out


def test_gate_promotion_to_canary_10_runs_the_shadow_gate(store, tmp_path, capsys):
    # GIVEN shadow live, canary 10 committed, and agreeing comparisons
    live(store, tmp_path, brain_mode="shadow", canary_percent=0)
    committed = write_flags(tmp_path / "stg.json", brain_mode="canary", canary_percent=10)
    seed_comparisons(store, utc_now() - HOUR_AGO, 200)
    # WHEN the gate runs THEN it is the shadow gate, and it passes
    assert run(["gate", "promotion", "--env", "stg", "--file", str(committed)], store) == 0
    out = capsys.readouterr().out
    assert "promotion shadow -> canary-10 needs the shadow gate" in out and "shadow gate passed" in out


def test_gate_promotion_to_canary_50_without_canary_records_exits_2(store, tmp_path, capsys):
    live(store, tmp_path, brain_mode="canary", canary_percent=10)
    committed = write_flags(tmp_path / "stg.json", brain_mode="canary", canary_percent=50)
    assert run(["gate", "promotion", "--env", "stg", "--file", str(committed)], store) == 2
    assert "no llm-arm turns since" in capsys.readouterr().err


def test_gate_promotion_that_skips_a_stage_fails_the_gate(store, tmp_path, capsys):
    # GIVEN nothing live yet (a new project) and a committed file at canary 50
    committed = write_flags(tmp_path / "dev.json", brain_mode="canary", canary_percent=50)
    # WHEN the gate runs THEN it refuses: legacy -> canary-50 skips shadow and canary-10
    assert run(["gate", "promotion", "--env", "dev", "--file", str(committed)], store) == 1
    assert (
        capsys.readouterr().err
        == "refused: dev: legacy -> canary-50 skips shadow, canary-10 (one stage at a time)\n"
    )
