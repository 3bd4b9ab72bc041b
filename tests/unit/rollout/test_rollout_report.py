"""``charter shadow report``: agreement over a generated mixed workload matches a count made
here from the stored records; the verdict follows the criteria; the window filters."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from rollout_fakes import ORG, make_runtime, send

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.cli import build_parser
from shared_lib.rollout.comparison import compare, comparison_path
from shared_lib.rollout.report import PromotionCriteria, build_report, load_comparisons, parse_duration

WORKLOAD = [
    ("u1", "田中さんに見積書を作成するタスクを明日までにお願い"),
    ("u1", "おはよう"),
    ("u1", "覚えておいて：私はコーヒーはブラック派"),
    ("u2", "鈴木さんに議事録のまとめを頼んでおいて"),
    ("u2", "自分のタスク一覧を教えて"),
    ("u1", "全社員の一覧を見せて"),
    ("u2", "山田さんの権限をレベル6に変更して"),
    ("u3", "今日は暑いね"),
    ("u3", "全員に明日の全体会議は10時からとアナウンスして"),
    ("u1", "ありがとう"),
    ("u2", "明日の天気はどうかな"),
    ("u1", "田中さんのタスクを確認して"),
    ("u1", "お知らせがあります"),
    ("u2", "覚えてる？昨日の話"),
    ("u1", "完了したタスクある？"),
]


def report_json(store, capsys, *argv: str) -> dict:
    args = build_parser().parse_args(["shadow", "report", "--json", *argv])
    args.store = store
    assert args.func(args) == 0
    return json.loads(capsys.readouterr().out)


def independent_count(store, turn_ids):
    """Agreement counted straight from the observer's records, without the rollout code."""
    count = Counter()
    by_intent = Counter()
    for turn_id in turn_ids:
        served = store.get(f"orgs/{ORG}/observability/{turn_id}")
        candidate = store.get(f"orgs/{ORG}/shadow_candidates/{turn_id}-0")
        if served is None or candidate is None:
            continue
        count["samples"] += 1
        by_intent[served["output_type"] or "none"] += 1
        count["intent"] += served["output_type"] == candidate["output_type"]
        count["tool"] += sorted(t["tool_name"] for t in served["selected_tools"]) == sorted(
            t["tool_name"] for t in candidate["selected_tools"]
        )
        count["guardian_action"] += served["guardian_action"] == candidate["guardian_action"]
        gated = {served["auth_result"], candidate["auth_result"]} <= {"allowed", "denied"}
        count["gated"] += gated
        count["auth_disagree"] += gated and served["auth_result"] != candidate["auth_result"]
        count["candidate_tokens"] += candidate["usage"]["input_tokens"] + candidate["usage"]["output_tokens"]
    return count, by_intent


def test_given_a_mixed_shadow_workload_when_reported_as_json_then_the_figures_match_an_independent_count(
    tmp_path, scripted_llm, capsys
):
    # GIVEN a mixed workload served in shadow mode through the in-process pipeline, twice over
    # (each message in its own room, so no confirmation is pending when the next one arrives)
    rt = make_runtime(tmp_path, llm=scripted_llm, brain_mode="shadow")
    turn_ids = [
        send(rt, text, user=user, room=f"room-{round_}-{i}")
        for round_ in range(2)
        for i, (user, text) in enumerate(WORKLOAD)
    ]
    # WHEN `charter shadow report --json` runs over the store
    report = report_json(rt.store, capsys, "--since", "1h")
    # THEN its agreement figures equal a count made from the stored records
    count, by_intent = independent_count(rt.store, turn_ids)
    assert count["samples"] == len(turn_ids)
    assert report["samples"] == count["samples"] and report["candidate_failures"] == 0
    agreement = report["agreement"]
    assert (agreement["intent"]["agree"], agreement["intent"]["total"]) == (count["intent"], count["samples"])
    assert (agreement["tool"]["agree"], agreement["tool"]["total"]) == (count["tool"], count["samples"])
    assert agreement["guardian_action"]["agree"] == count["guardian_action"]
    assert agreement["authorization"]["total"] == count["gated"]
    assert report["authorization_disagreements"] == count["auth_disagree"]
    assert {k: v["samples"] for k, v in report["by_intent"].items()} == dict(by_intent)
    assert sum(v["samples"] for v in report["by_tool"].values()) == count["samples"]
    # AND the workload is really mixed: some agree, some do not
    assert 0 < agreement["tool"]["agree"] < count["samples"]
    # AND each mismatch links both decision trails
    assert report["mismatch_count"] == count["samples"] - agreement["all"]["agree"]
    first = report["mismatches"][0]
    assert first["links"]["served"] == f"charter turns show {first['turn_id']} --org {ORG}"
    assert first["links"]["candidate"].endswith("--shadow")
    # AND cost and latency are reported for both arms (the candidate is the only LLM caller)
    assert report["cost_usd"]["candidate_total"] > report["cost_usd"]["served_total"] == 0
    assert report["tokens"]["candidate_total"] == count["candidate_tokens"] > 0
    # AND 24 samples are too few for the default criteria
    assert report["verdict"]["verdict"] == "HOLD" and "samples" in report["verdict"]["failed_checks"]


def comparison(
    turn_id: str,
    *,
    at: datetime,
    tool_agrees: bool = True,
    auth: tuple[str, str] = ("allowed",) * 2,
    org: str = ORG,
) -> dict:
    served = {
        "turn_id": turn_id,
        "org_id": org,
        "timestamp": at,
        "arm": "legacy",
        "output_type": "tool_call",
        "selected_tools": [{"tool_name": "save_memory", "parameters": {"content": "x"}}],
        "guardian_action": "allow",
        "guardian_reason": "pass",
        "auth_result": auth[0],
        "auth_reason": "",
        "final_response": "ok",
        "timings": {"brain": 1.0},
        "llm_duration_ms": 0,
        "usage": {},
        "cost_usd": 0,
        "errors": [],
    }
    tools = served["selected_tools"] if tool_agrees else [{"tool_name": "announce", "parameters": {}}]
    candidate = {
        **served,
        "arm": "llm",
        "selected_tools": tools,
        "auth_result": auth[1],
        "cost_usd": 0.01,
        "timings": {"brain": 801.0},
    }
    return compare(served, candidate)


def store_with(rows: list[dict]) -> MemoryStore:
    store = MemoryStore()
    for row in rows:
        store.set(comparison_path(row["org_id"], row["turn_id"]), row)
    return store


NOW = datetime.now(UTC)


def test_given_enough_agreeing_samples_when_reported_then_the_verdict_is_promote(capsys):
    rows = [comparison(f"T{i}", at=NOW - timedelta(minutes=i), tool_agrees=i % 50 != 0) for i in range(200)]
    report = report_json(store_with(rows), capsys, "--since", "1d")
    assert report["agreement"]["tool"] == {"agree": 196, "total": 200, "rate": 0.98}
    assert report["verdict"]["verdict"] == "PROMOTE" and report["verdict"]["failed_checks"] == []
    assert report["latency_ms"]["delta"]["mean"] == 800.0
    assert report["cost_usd"]["delta"]["mean"] == 0.01


def test_given_one_authorization_disagreement_when_reported_then_hold_and_fail_on_hold_exits_1(capsys):
    rows = [
        comparison(f"T{i}", at=NOW, auth=("denied", "allowed") if i == 7 else ("allowed", "allowed"))
        for i in range(250)
    ]
    store = store_with(rows)
    args = build_parser().parse_args(["shadow", "report", "--json", "--fail-on-hold"])
    args.store = store
    assert args.func(args) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["authorization_disagreements"] == 1
    assert report["verdict"]["failed_checks"] == ["authorization_disagreements"]


def test_given_custom_criteria_when_reported_then_they_apply(tmp_path, capsys):
    rows = [comparison(f"T{i}", at=NOW, tool_agrees=i % 2 == 0) for i in range(10)]
    criteria = tmp_path / "criteria.json"
    criteria.write_text(
        json.dumps({"min_samples": 10, "min_tool_agreement": 0.5, "min_intent_agreement": None})
    )
    report = report_json(store_with(rows), capsys, "--criteria", str(criteria))
    assert report["verdict"]["verdict"] == "PROMOTE"
    report = report_json(store_with(rows), capsys, "--criteria", str(criteria), "--min-tool-agreement", "0.9")
    assert report["verdict"]["failed_checks"] == ["tool_agreement"]


def test_given_old_and_other_org_comparisons_when_reported_with_since_and_org_then_they_are_left_out(capsys):
    rows = [
        comparison("recent", at=NOW - timedelta(hours=1)),
        comparison("old", at=NOW - timedelta(days=3)),
        comparison("elsewhere", at=NOW, org="globex"),
    ]
    store = store_with(rows)
    assert report_json(store, capsys, "--since", "24h")["samples"] == 2
    assert report_json(store, capsys, "--since", "24h", "--org", ORG)["samples"] == 1
    assert [r["turn_id"] for r in load_comparisons(store)] == ["old", "recent", "elsewhere"]


def test_given_the_text_form_when_reported_then_the_verdict_and_links_are_printed(capsys):
    rows = [comparison("T1", at=NOW, tool_agrees=False)]
    args = build_parser().parse_args(["shadow", "report"])
    args.store = store_with(rows)
    assert args.func(args) == 0
    text = capsys.readouterr().out
    assert "verdict: HOLD" in text and "charter turns show T1 --org acme" in text


def test_given_failed_candidates_when_reported_then_they_count_apart_from_agreement():
    ok = comparison("T1", at=NOW)
    failed = {
        **comparison("T2", at=NOW),
        "candidate_failed": True,
        "all_agree": None,
        "agree": dict.fromkeys(ok["agree"]),
    }
    report = build_report([ok, failed], criteria=PromotionCriteria(min_samples=1))
    assert report["candidate_failures"] == 1 and report["candidate_failure_rate"] == 0.5
    assert report["agreement"]["tool"] == {"agree": 1, "total": 1, "rate": 1.0}
    assert "candidate_failure_rate" in report["verdict"]["failed_checks"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("90s", timedelta(seconds=90)),
        ("30m", timedelta(minutes=30)),
        ("24h", timedelta(hours=24)),
        ("7d", timedelta(days=7)),
        ("2w", timedelta(weeks=2)),
    ],
)
def test_given_a_duration_when_parsed_then_it_is_a_timedelta(text, expected):
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "7", "d7", "0h", "-1d", "1y"])
def test_given_a_bad_duration_when_parsed_then_value_error(text):
    with pytest.raises(ValueError):
        parse_duration(text)


@pytest.mark.parametrize(("minimum", "code"), [("0.95", 0), ("0.99", 1)])
def test_given_the_ci_gate_when_min_agreement_is_given_then_the_exit_code_follows_the_verdict(
    minimum, code, capsys
):
    # GIVEN 200 comparisons with 98 % tool agreement
    rows = [comparison(f"T{i}", at=NOW, tool_agrees=i % 50 != 0) for i in range(200)]
    args = build_parser().parse_args(["shadow", "report", "--min-agreement", minimum])
    args.store = store_with(rows)
    # WHEN the pipeline's gate runs THEN it passes at 95 % and fails at 99 %
    assert args.func(args) == code
    assert f"verdict: {'PROMOTE' if code == 0 else 'HOLD'}" in capsys.readouterr().out
