"""The operator commands over the in-process runtime (the emulator test runs them from the environment)."""

from __future__ import annotations

import json

import pytest
from ops_fakes import ORG, TASK_CREATE, policy_file, send

from shared_lib.cli import build_parser
from shared_lib.layers.base import LayerRunner
from shared_lib.telemetry.llm_calls import LLMCallLog
from shared_lib.turn.callctx import call_context
from tests.conftest import configure_from_env

SEED_FIELDS = (
    "record_id",
    "timestamp",
    "user_id",
    "organization_id",
    "room_id",
    "input_message",
    "context_summary",
    "llm_model",
    "llm_reasoning",
    "llm_confidence",
    "selected_tools",
    "guardian_action",
    "guardian_reason",
    "auth_result",
    "auth_reason",
    "execution_success",
    "execution_result",
    "execution_error",
    "final_response",
    "total_duration_ms",
    "llm_duration_ms",
    "tool_duration_ms",
    "self_critique_executed",
    "self_critique_result",
)


def charter(rt, capsys, *argv: str) -> tuple[int, str]:
    args = build_parser().parse_args(list(argv))
    args.runtime = rt
    code = args.func(args)
    return code, capsys.readouterr().out


def test_turns_list_json_lists_every_demo_turn_with_every_seed_field(rt, demo_turns, capsys):
    code, out = charter(rt, capsys, "turns", "list", "--json")
    rows = json.loads(out)
    assert code == 0 and sorted(r["record_id"] for r in rows) == sorted(demo_turns)
    for row in rows:
        assert set(SEED_FIELDS) <= set(row)
        assert all(
            row[f] not in (None, "")
            for f in ("input_message", "llm_reasoning", "final_response", "guardian_action", "auth_result")
        )


def test_turns_show_prints_the_trail_layer_by_layer_for_every_turn(rt, demo_turns, capsys):
    for turn_id in demo_turns:
        code, out = charter(rt, capsys, "turns", "show", turn_id)
        assert code == 0 and turn_id in out
        for layer in ("context", "brain", "guardian", "authorizer", "executor", "responder"):
            assert f" {layer} " in out, (turn_id, layer)
        for part in ("input", "proposal", "reasoning", "guardian", "authorize", "reply", "usage"):
            assert f"  {part} " in out


def test_turns_show_json_has_the_record_and_its_llm_call_log(rt, capsys, monkeypatch):
    # GIVEN the LLM call log wired in, and the runner binding each layer's turn (the runtime's wiring)
    run = LayerRunner.run

    def run_in_context(self, turn):  # type: ignore[no-untyped-def]
        with call_context(turn, self.layer.name):
            return run(self, turn)

    monkeypatch.setattr(LayerRunner, "run", run_in_context)
    rt.llm = LLMCallLog(rt.llm, rt.store, prices=rt.prices)
    # WHEN a turn is shown
    turn_id = send(rt, TASK_CREATE)
    code, out = charter(rt, capsys, "turns", "show", turn_id, "--org", ORG, "--json")
    data = json.loads(out)
    # THEN its LLM calls come with it, masked prompt and all
    assert code == 0 and data["record"]["record_id"] == turn_id and data["shadow_comparison"] is None
    calls = data["llm_calls"]
    # the development flags sample self-critique (seed 000: about 20 %): the draw is the turn id's
    critique = ["self_critique"] if data["record"]["self_critique_executed"] else []
    assert [c["call_type"] for c in calls] == ["routing", "proposal", *critique, "integration"]
    assert [c["layer"] for c in calls] == ["context", "brain", *(["brain"] if critique else []), "responder"]
    assert all(c["prompt_messages"] for c in calls)


def test_turns_show_and_cost_count_the_same_calls(rt, capsys):
    # GIVEN the LLM call log wired in, and one turn served by the LLM arm
    rt.llm = LLMCallLog(rt.llm, rt.store, prices=rt.prices)
    turn_id = send(rt, TASK_CREATE)
    # WHEN the turn is shown and today's cost is asked for
    _, shown = charter(rt, capsys, "turns", "show", turn_id, "--org", ORG, "--json")
    _, cost = charter(rt, capsys, "cost", "--org", ORG, "--json")
    data, report = json.loads(shown), json.loads(cost)
    # THEN the call log's entries add up to the turn's usage, and the cost report is that turn's cost
    calls, usage = data["llm_calls"], data["record"]["usage"]
    # the router's classifier, the proposal, the phrasing, and the self-critique when sampled
    critique = 1 if data["record"]["self_critique_executed"] else 0
    assert len(calls) == usage["llm_calls"] == 3 + critique
    assert sum(c["prompt_tokens"] for c in calls) == usage["input_tokens"] == report["input_tokens"]
    assert sum(c["response_tokens"] for c in calls) == usage["output_tokens"] == report["output_tokens"]
    assert sum(c["cost_usd"] for c in calls) == pytest.approx(data["record"]["cost_usd"])
    assert report["cost_today_usd"] == pytest.approx(data["record"]["cost_usd"]) and report["turns"] == 1


def test_without_the_call_log_no_other_record_of_the_calls_is_shown(rt, capsys):
    # GIVEN no call log (an injected model, as in most tests)
    turn_id = send(rt, TASK_CREATE)
    # WHEN the turn is shown
    code, out = charter(rt, capsys, "turns", "show", turn_id, "--json")
    data = json.loads(out)
    # THEN the turn's usage is there, and no call list is made up from another source
    # (the classifier, the proposal, the phrasing, and the self-critique when sampled)
    critique = 1 if data["record"]["self_critique_executed"] else 0
    assert code == 0 and data["record"]["usage"]["llm_calls"] == 3 + critique and data["llm_calls"] == []


@pytest.mark.parametrize(("flag", "value"), [("--arm", "llm"), ("--outcome", "confirm"), ("--org", ORG)])
def test_turns_list_filters(rt, demo_turns, capsys, flag, value):
    code, out = charter(rt, capsys, "turns", "list", flag, value, "--json")
    rows = json.loads(out)
    assert code == 0 and rows
    if flag == "--arm":
        assert all(value in (r["arm"], r["flags_arm"]) for r in rows)
    if flag == "--outcome":
        assert all(value in (r["response_kind"], r["guardian_action"], r["auth_result"]) for r in rows)


def test_replay_reports_the_changed_verdict(rt, capsys, tmp_path, monkeypatch):
    turn_id = send(rt, TASK_CREATE)
    monkeypatch.setenv("CHARTER_POLICY", str(policy_file(tmp_path, confidence={"medium": 0.95})))
    configure_from_env()
    code, out = charter(rt, capsys, "replay", turn_id)
    assert code == 0 and "CHANGED" in out and "LLM calls made: 0" in out
    code, out = charter(rt, capsys, "replay", turn_id, "--json")
    assert json.loads(out)["changed"] is True


@pytest.mark.parametrize(
    "argv",
    [
        ["audit", "constitution"],
        ["cost"],
        ["cost", "--day", "2026-11-01"],
        ["metrics", "--since", "2h"],
        ["alerts"],
        ["llm-calls"],
    ],
)
def test_the_other_views_run_in_text_and_json(rt, demo_turns, capsys, argv):
    code, text = charter(rt, capsys, *argv)
    assert code in (0, 1) and text.strip()
    code_json, out = charter(rt, capsys, *argv, "--json")
    assert code_json == code
    json.loads(out)


def test_not_found_and_bad_input_have_their_exit_codes(rt, capsys):
    assert charter(rt, capsys, "turns", "show", "01NOSUCHTURN00000000000000")[0] == 1
    assert charter(rt, capsys, "replay", "01NOSUCHTURN00000000000000")[0] == 1
    assert charter(rt, capsys, "turns", "list", "--since", "yesterday-ish")[0] == 2
