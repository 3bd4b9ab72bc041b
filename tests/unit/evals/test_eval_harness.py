"""The harness: cases through the real in-process pipeline, the figures computed right on a tiny
set with known answers (one of them wrong), the JSON the command prints, and which brains run
without a key."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from infra import cli
from infra.eval_cli import choose_brains
from infra.fake_llm.port import InProcessScriptedLLM
from shared_lib.errors import ConfigError
from shared_lib.evals.dataset import Case, Contains
from shared_lib.evals.report import run_eval
from shared_lib.evals.runner import Brain, Observed, eval_settings, run_case
from shared_lib.evals.scoring import percentile, score_case, value_matches

NOW = datetime(2026, 11, 18, 1, 0, tzinfo=UTC)  # 10:00 in Tokyo, a Wednesday
TASK = {
    "id": "task",
    "category": "tool:chatwork_task_create",
    "utterance": "田中さんに明日までに見積書を作成するタスクをお願いできる？",
    "expected": {
        "tool": "chatwork_task_create",
        "parameters": {"assignee_name": {"contains": "田中"}, "limit_date": "2026-11-19"},
        "verdict": {"action": "allow"},
        "executed": True,
    },
}
HELLO = {
    "id": "hello",
    "category": "small_talk",
    "utterance": "おはよう",
    "expected": {"output_type": "text_response"},
}
WRONG = {  # the legacy brain does not ask which 佐藤さん: this case fails on purpose
    "id": "sato",
    "category": "ambiguity",
    "utterance": "佐藤さんに議事録のまとめを頼んでおいて",
    "expected": {"tool": "chatwork_task_create", "parameters": {"body": "議事録"}, "clarification": True},
}
TINY = [Case.model_validate(c) for c in (TASK, HELLO, WRONG)]


def _settings():  # type: ignore[no-untyped-def]
    return eval_settings({})


def test_figures_of_a_tiny_set_with_known_answers() -> None:
    # GIVEN three cases, the third expecting what the legacy brain does not do
    # WHEN the legacy brain runs them through the pipeline
    result = run_eval(TINY, [Brain("legacy", "legacy")], _settings(), dataset="tiny", note="n")
    # THEN the figures count each check once, per case and per category
    s = result["brains"][0]
    assert (s["cases"], s["passed"], s["accuracy"], s["errors"]) == (3, 2, 0.6667, 0)
    assert s["tool_accuracy"] == {"correct": 2, "total": 2, "rate": 1.0}
    # body "議事録" is compared whole: the brain said 「議事録のまとめ」
    assert s["parameter_accuracy"] == {"correct": 2, "total": 3, "rate": 0.6667}
    assert s["verdict_agreement"] == {"correct": 1, "total": 1, "rate": 1.0}
    assert s["clarification_agreement"] == {"correct": 0, "total": 1, "rate": 0.0}
    assert s["output_type_accuracy"]["rate"] == 1.0
    assert s["route_accuracy"] == {"correct": 0, "total": 0, "rate": None}
    assert s["by_group"]["ambiguity"] == {"correct": 0, "total": 1, "rate": 0.0}
    assert s["by_category"]["tool:chatwork_task_create"]["rate"] == 1.0
    assert [(f["id"], f["failed"]) for f in s["failures"]] == [("sato", ["param:body", "clarification"])]
    assert s["cost"]["llm_calls"] == 0 and s["leaks"] == 0
    assert s["latency_ms"]["median"] is not None and s["latency_ms"]["p95"] >= s["latency_ms"]["median"]


def test_a_case_runs_the_deciding_layers_for_real() -> None:
    seen = run_case(Brain("legacy", "legacy"), TINY[0], _settings())
    assert (seen.arm, seen.tool, seen.verdict_action, seen.auth_result, seen.executed) == (
        "legacy",
        "chatwork_task_create",
        "allow",
        "allowed",
        True,
    )
    assert seen.response_kind == "reply" and seen.replies and seen.error is None


def test_previous_turns_leave_a_confirmation_that_the_case_answers() -> None:
    case = Case.model_validate(
        {
            "id": "yes",
            "category": "confirmation",
            "utterance": "はい",
            "previous": [{"text": "見積書のタスクを削除して"}],
            "expected": {"tool": "delete_task", "verdict": {"action": "allow"}, "executed": True},
        }
    )
    seen = run_case(Brain("legacy", "legacy"), case, _settings())
    assert score_case(case, seen).passed, seen
    assert seen.arm == "state" and len(seen.replies) == 2


def test_an_injected_llm_port_serves_the_llm_arm_and_its_cost_is_counted() -> None:
    # the code path of Claude, with the scripted model as the injected port
    llm = InProcessScriptedLLM()
    result = run_eval(TINY[:1], [Brain("claude", "llm", llm, "claude-sonnet-4-6")], _settings())
    s = result["brains"][0]
    assert llm.calls == s["cost"]["llm_calls"] == 3  # the router's classifier, the proposal, the reply
    assert s["cost"]["total_usd"] > 0 and s["model"] == "claude-sonnet-4-6"
    assert s["passed"] == 1


def test_the_llm_arm_without_any_llm_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="no LLM is configured"):
        run_case(Brain("claude", "llm"), TINY[0], _settings())


@pytest.mark.parametrize(
    ("expected", "observed", "ok"),
    [
        ("2026-11-19", "明日", True),
        ("2026-11-27", "来週金曜", True),
        ("2026-11-20", "2026-11-20", True),
        ("2026-11-20", "明日", False),
        (Contains(contains="見積"), "見積書を作成", True),
        (Contains(contains="請求"), "見積書", False),
        ("all", "ALL", True),
        (6, 6, True),
        (6, "6", True),
        (5, 3, False),
        (["田中", "山田"], ["山田", "田中"], True),
        ("議事録", "議事録のまとめ", False),
        ("議事録", None, False),
    ],
)
def test_value_matching(expected: object, observed: object, ok: bool) -> None:
    assert value_matches(expected, observed, NOW) is ok  # type: ignore[arg-type]


def test_verdict_covers_and_authorization_are_checked() -> None:
    case = Case.model_validate(
        {
            "id": "v",
            "category": "guardian:params.recipients_all",
            "utterance": "x",
            "expected": {
                "verdict": {
                    "action": "confirm",
                    "reason": "danger.medium",
                    "covers": ["params.recipients_all"],
                },
                "authorization": {"result": "allowed"},
            },
        }
    )
    seen = Observed("v", verdict_action="confirm", verdict_reason="danger.medium", auth_result="allowed")
    assert score_case(case, seen).checks == {"verdict": False, "authorization": True}
    seen.verdict_covers = ["danger.medium", "params.recipients_all"]
    assert score_case(case, seen).passed


def test_leaks_iso_dates_and_internal_names_in_replies_are_found() -> None:
    seen = Observed(
        "x", replies=["電話は[PHONE_1]ウル", "[EMAIL]に送ったウル", "期限は2026-11-19、delete_taskウル"]
    )
    assert seen.leaks() == ["[PHONE_1]", "[EMAIL]"]
    assert seen.iso_dates() == ["2026-11-19"]
    assert seen.internal_names(["delete_task", "announce"]) == ["delete_task"]


def test_percentile_is_nearest_rank() -> None:
    assert percentile([float(v) for v in range(1, 21)], 95) == 19.0
    assert percentile([3.0], 95) == 3.0


def test_without_a_key_the_command_runs_legacy_and_scripted_and_says_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(["eval", "run", "--json", "--limit", "3"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["cases"] == 3 and out["leaks"] == 0
    assert "ANTHROPIC_API_KEY is not set" in out["note"]
    assert [b["brain"] for b in out["brains"]] == ["legacy", "scripted"]
    figures = {
        "accuracy",
        "by_category",
        "by_group",
        "route_accuracy",
        "tool_accuracy",
        "parameter_accuracy",
        "verdict_agreement",
        "authorization_agreement",
        "clarification_agreement",
        "execution_agreement",
        "cost",
        "latency_ms",
        "leaks",
        "hygiene",
        "failures",
    }
    for brain in out["brains"]:
        assert figures <= set(brain)
        assert set(brain["cost"]) == {
            "total_usd",
            "per_case_usd",
            "input_tokens",
            "output_tokens",
            "llm_calls",
        }
        assert set(brain["latency_ms"]) == {"median", "p95"}
    assert out["brains"][1]["cost"]["llm_calls"] > 0


def test_text_output_names_the_brains(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["eval", "run", "--limit", "2", "--brain", "legacy"]) == 0
    text = capsys.readouterr().out
    assert "── legacy: " in text and "ran legacy as asked" in text and "scripted" not in text


def test_claude_without_a_key_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["eval", "run", "--brain", "claude", "--limit", "1"]) == 2
    assert "ANTHROPIC_API_KEY" in capsys.readouterr().err


def test_with_a_key_the_default_is_legacy_and_claude() -> None:
    settings = eval_settings({"ANTHROPIC_API_KEY": "sk-test"})
    brains, note = choose_brains(None, settings, "claude-opus-4-5")
    # the Anthropic adapter is built from the settings (llm None), with the model asked for
    assert [(b.name, b.arm, b.llm, b.model) for b in brains] == [
        ("legacy", "legacy", None, None),
        ("claude", "llm", None, "claude-opus-4-5"),
    ]
    assert "Claude" in note and "not set" not in note


def test_an_invalid_dataset_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({**HELLO, "expected": {"tool": "send_fax"}}) + "\n", encoding="utf-8")
    assert cli.main(["eval", "run", "--dataset", str(bad)]) == 2
    assert "unknown tool 'send_fax'" in capsys.readouterr().err
    assert cli.main(["eval", "check", "--dataset", str(bad)]) == 2
