"""The steps of a turn in its record and its decision trail (issue 16, deliverable 6): one row per
step, the loop's stop and the seed 002 §7.1 events with the §7.2 fields, masked, shown by
`charter turns show` and its --json. Two-step turns run the in-process chain of the loop tests."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "loop"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "brain"))
from brain_fakes import usage
from loop_fakes import LOOK, ORG, SEARCH, Chain, complete_found, text, tool_call

from shared_lib.cli import build_parser
from shared_lib.ids import utc_now
from shared_lib.observability.records import ObservabilityRecord, build_record
from shared_lib.ops import render
from shared_lib.ops.schema import bigquery_schema
from shared_lib.turn.envelope import RouteSection, Turn

ASK = "自分のタスクを確認して、資料のタスクは完了にして"
EVENTS = ["router.decision", "worker.success", "worker.success", "loop.stop", "final.route"]


def record(chain: Chain, turn: Turn) -> ObservabilityRecord:
    doc = chain.rt.store.get(f"orgs/{ORG}/observability/{turn.turn_id}")
    assert doc is not None
    return ObservabilityRecord.from_doc(doc)


def two_steps(*, why: str = LOOK["why"]) -> tuple[Chain, Turn, ObservabilityRecord]:
    search = tool_call("chatwork_task_search", {"assignee_name": "自分"}, loop={**LOOK, "why": why})
    chain = Chain([search, complete_found], usages=[usage(cw=1200), usage(cr=1200)])
    _reply, turn = chain.say(ASK)
    return chain, turn, record(chain, turn)


def test_a_two_step_turn_has_a_row_for_each_step_and_the_loop_row():
    # GIVEN a turn that searched, then completed the task it found
    _chain, turn, rec = two_steps()
    # THEN the record has both steps in order, each as the deciding layers judged it
    first, second = rec.steps
    assert (first.step, second.step) == (1, 2) and {first.turn_id, second.turn_id} == {turn.turn_id}
    assert first.tools == ["chatwork_task_search"] and second.tools == ["chatwork_task_complete"]
    assert second.tool_calls[0].parameters["task_query"] == "資料を作る"
    assert (first.verdict, first.authorization, first.ok) == ("allow", "allowed", True)
    assert (second.verdict, second.authorization, second.ok) == ("allow", "allowed", True)
    assert first.results[0]["result"]["count"] == 2 and second.results[0]["result"]["status"] == "done"
    # AND the worker's hand-over of each step, and its own brain calls (the cache figures per step)
    assert (first.needs_next_loop, first.risk, first.why) == (True, "low", LOOK["why"])
    assert second.needs_next_loop is False and first.confidence == 0.95
    assert (first.cache_creation_input_tokens, first.cache_read_input_tokens) == (1200, 0)
    assert (second.cache_creation_input_tokens, second.cache_read_input_tokens) == (0, 1200)
    assert first.input_tokens == second.input_tokens == 100
    # AND the loop's stop and the §7.1 events, the router's first
    assert rec.loop.stop_reason == "done" and rec.loop.worker_calls == 2 and not rec.loop.reroute_used
    assert [e.event for e in rec.loop.events] == EVENTS
    decided, final = rec.loop.events[0], rec.loop.events[-1]
    assert (decided.initial_route, decided.source, decided.step) == ("CHAT", "fallback", 1)
    assert (final.initial_route, final.final_route, final.worker_calls, final.stop_reason) == (
        "CHAT",
        "CHAT",
        2,
        "done",
    )
    assert final.reroute_used is False and final.needs_next_loop is False and final.step == 2
    # AND the top-level fields stay the last step's, as before
    assert rec.step_count == 2 and [t.tool_name for t in rec.selected_tools] == second.tools


def test_the_step_rows_and_events_are_masked():
    # GIVEN the user's tasks hold a phone number and the step's reason names one
    chain = Chain([])
    chain.add_task("090-1234-5678 に資料の件で電話", "m9")
    why = "080-9876-5432 の件を探すため"
    chain.steps = [tool_call("chatwork_task_search", {"assignee_name": "自分"}, loop={**LOOK, "why": why})]
    _reply, turn = chain.say(ASK)
    rec = record(chain, turn)
    # THEN neither number is in the rows, in any form of the record
    shown = json.dumps(rec.model_dump(mode="json", include={"steps", "loop"}), ensure_ascii=False)
    assert "090-1234-5678" not in shown and "080-9876-5432" not in shown
    assert "[PHONE" in rec.steps[0].why and "[PHONE" in json.dumps(rec.steps[0].results, ensure_ascii=False)


def test_a_single_step_turn_has_one_step_row_that_agrees_with_the_record():
    chain = Chain([text("こんにちはウル🐺")])
    _reply, turn = chain.say("今日はいい天気だね、調子はどう？")
    rec = record(chain, turn)
    (only,) = rec.steps
    assert only.step == 1 and only.output_type == rec.output_type == "text_response" and only.tools == []
    assert only.verdict == rec.guardian_action and only.authorization == rec.auth_result
    assert only.results == [] and only.needs_next_loop is False
    assert [e.event for e in rec.loop.events] == ["router.decision", "loop.stop", "final.route"]
    assert rec.loop.stop_reason == "done" and rec.loop.worker_calls == 0


def test_a_denied_second_step_is_recorded_as_denied_and_stops_the_loop():
    chain = Chain([SEARCH, tool_call("view_all_users", {})])
    _reply, turn = chain.say("自分のタスクを確認して、全員の一覧も見せて", user="u2")
    rec = record(chain, turn)
    assert [(s.verdict, s.authorization) for s in rec.steps] == [("allow", "allowed"), ("allow", "denied")]
    assert rec.steps[1].results == [] and rec.loop.stop_reason == "denied"
    assert rec.loop.worker_calls == 1


def test_a_reroute_keeps_the_routers_initial_route_and_records_the_override():
    wrong = text("この依頼は分析に向いているウル", loop={"fit": False, "suggested_route": "ANALYZE"})
    chain = Chain([wrong, wrong])
    _reply, turn = chain.say("先月のタスクの傾向を分析して")
    rec = record(chain, turn)
    assert [s.route for s in rec.steps] == ["CHAT", "ANALYZE"] and rec.loop.reroute_used
    assert rec.route is not None and rec.route.initial_route == "CHAT"
    events = {e.event: e for e in rec.loop.events}
    assert events["router.decision"].initial_route == "CHAT"
    assert (events["route.override"].initial_route, events["route.override"].final_route) == (
        "CHAT",
        "ANALYZE",
    )
    assert (events["final.route"].initial_route, events["final.route"].final_route) == ("CHAT", "ANALYZE")
    assert rec.steps[0].fit is False


class _ClassifiedRoute(RouteSection):
    """``turn.route`` with the classifier's fields (read with ``getattr`` until the envelope has them)."""

    classifier_route: str | None = None
    classifier_confidence: float | None = None
    classifier_error: str | None = None


def _routed(**classifier: Any) -> Turn:
    chain = Chain([text("こんにちはウル🐺")])
    _reply, turn = chain.say("今日はいい天気だね")
    turn.route = _ClassifiedRoute(**{**turn.route.model_dump(), "source": "classifier", **classifier})
    return turn


def test_the_router_decision_carries_the_classifier_and_a_classifier_error_is_an_event():
    ok = build_record(_routed(classifier_route="PLAN", classifier_confidence=0.62), recorded_at=utc_now())
    decided = ok.loop.events[0]
    assert (decided.event, decided.classifier_route, decided.classifier_confidence) == (
        "router.decision",
        "PLAN",
        0.62,
    )
    assert "classifier.error" not in [e.event for e in ok.loop.events]
    failed = build_record(_routed(classifier_error="classifier_timeout 090-1234-5678"), recorded_at=utc_now())
    (error,) = [e for e in failed.loop.events if e.event == "classifier.error"]
    assert error.step == 1 and error.error_reason is not None
    assert error.error_reason.startswith("classifier_timeout") and "090-1234-5678" not in error.error_reason


def test_an_envelope_without_a_router_has_no_router_event():
    turn = _routed()
    turn.route = RouteSection()
    events = [e.event for e in build_record(turn, recorded_at=utc_now()).loop.events]
    assert events == ["loop.stop", "final.route"]


def test_turns_show_prints_the_steps_the_loop_and_the_events(capsys):
    chain, turn, _rec = two_steps()
    args = build_parser().parse_args(["turns", "show", turn.turn_id, "--org", ORG])
    args.runtime = chain.rt
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert "step 1  chatwork_task_search  allow/allowed  ok  next=yes  cache r/w 0/1200" in out
    assert "step 2  chatwork_task_complete  allow/allowed  ok  next=no  cache r/w 1200/0" in out
    assert "stop done after 2 step(s), reroute no, worker calls 2" in out
    events = [line.split()[2] for line in out.splitlines() if line.strip().startswith("event ")]
    assert events == EVENTS
    args = build_parser().parse_args(["turns", "show", turn.turn_id, "--org", ORG, "--json"])
    args.runtime = chain.rt
    assert args.func(args) == 0
    shown = json.loads(capsys.readouterr().out)["record"]
    assert [s["tools"] for s in shown["steps"]] == [["chatwork_task_search"], ["chatwork_task_complete"]]
    assert [e["event"] for e in shown["loop"]["events"]] == EVENTS


def test_render_names_a_failed_step_and_a_carried_step():
    _chain, _turn, rec = two_steps()
    failed = rec.steps[1].model_copy(update={"ok": False, "error_code": "not_found"})
    carried = rec.steps[0].model_copy(update={"turn_id": "01PAUSEDTURN"})
    lines = render.trail(rec.model_copy(update={"steps": [carried, failed]}))
    assert "failed not_found" in lines and "(turn 01PAUSEDTURN)" in lines


def test_the_bigquery_schema_has_the_steps_and_the_loop_as_records():
    columns = {c["name"]: c for c in bigquery_schema()}
    steps, loop = columns["steps"], columns["loop"]
    assert (steps["type"], steps["mode"]) == ("RECORD", "REPEATED")
    assert {"step", "tools", "verdict", "cache_read_input_tokens", "why"} <= {
        f["name"] for f in steps["fields"]
    }
    assert (loop["type"], loop["mode"]) == ("RECORD", "NULLABLE")
    events = next(f for f in loop["fields"] if f["name"] == "events")
    assert (events["type"], events["mode"]) == ("RECORD", "REPEATED")
    seed_fields = {
        "initial_route",
        "final_route",
        "classifier_route",
        "classifier_confidence",
        "worker_calls",
        "needs_next_loop",
        "risk",
        "fit",
        "reroute_used",
        "stop_reason",
        "error_reason",
    }
    assert seed_fields <= {f["name"] for f in events["fields"]}
