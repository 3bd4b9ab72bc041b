"""Shadow mode in process: the user gets exactly the legacy reply, the candidate's tool call
is never executed, and a comparison record exists; a slow or broken candidate never
reaches the served arm."""

from __future__ import annotations

import threading

from rollout_fakes import ORG, ScriptedLLM, make_runtime, replies, send

from shared_lib.collections import session_path
from shared_lib.layers import shadow
from shared_lib.turn.envelope import Turn

TASK = "田中さんに見積書を作成するタスクを明日までにお願い"


def _legacy_reply(tmp_path, text: str) -> str:
    legacy = make_runtime(tmp_path, brain_mode="legacy")
    send(legacy, text)
    return replies(legacy)[-1]


def test_given_shadow_mode_when_a_task_is_asked_then_the_user_gets_exactly_the_legacy_reply(
    tmp_path, scripted_llm
):
    # GIVEN shadow mode for everyone, with an LLM that proposes the task differently from the legacy brain
    rt = make_runtime(tmp_path, llm=scripted_llm, brain_mode="shadow", shadow_sample_percent=100)
    expected = _legacy_reply(tmp_path, TASK)
    # WHEN the user asks for a task
    turn_id = send(rt, TASK)
    # THEN exactly one reply was sent, and it is the legacy brain's reply
    assert replies(rt) == [expected]
    served = rt.store.get(f"orgs/{ORG}/observability/{turn_id}")
    assert served["arm"] == "legacy" and served["flags_reason"] == "DEFAULT"
    # AND the candidate (the LLM arm) ran, dry, on a copy
    candidate = rt.store.get(f"orgs/{ORG}/shadow_candidates/{turn_id}-0")
    assert candidate["arm"] == "llm"
    assert [r["dry_run"] for r in candidate["execution_result"]] == [True]
    assert scripted_llm.calls[0].call_type == "proposal"


def test_given_shadow_mode_when_the_candidate_proposes_a_tool_then_it_is_never_executed(
    tmp_path, scripted_llm
):
    # GIVEN shadow mode; the candidate proposes the task with its own body ("見積書を作成")
    rt = make_runtime(tmp_path, llm=scripted_llm, brain_mode="shadow")
    # WHEN the user asks for a task
    turn_id = send(rt, TASK)
    candidate = rt.store.get(f"orgs/{ORG}/shadow_candidates/{turn_id}-0")
    served = rt.store.get(f"orgs/{ORG}/observability/{turn_id}")
    assert candidate["selected_tools"][0]["parameters"]["body"] == "見積書を作成"
    # THEN the candidate's call was validated as a dry run, with no receipt
    assert [(r["dry_run"], r["receipt_id"]) for r in candidate["execution_result"]] == [(True, None)]
    # AND the only effects in the store are the served arm's: its receipts, its task, never the candidate's body
    served_receipts = sorted(r["receipt_id"] for r in served["execution_result"] if r["receipt_id"])
    assert sorted(doc_id for doc_id, _ in rt.store.query(f"orgs/{ORG}/receipts")) == served_receipts
    tasks = rt.store.query(f"orgs/{ORG}/tasks")
    assert len(tasks) == len(served_receipts)
    assert all(task["body"] != "見積書を作成" for _, task in tasks)
    # AND one message was sent
    assert len(replies(rt)) == 1


def test_given_shadow_mode_when_a_turn_completes_then_a_comparison_record_exists(tmp_path, scripted_llm):
    # GIVEN shadow mode
    rt = make_runtime(tmp_path, llm=scripted_llm, brain_mode="shadow")
    # WHEN a task request is served
    turn_id = send(rt, TASK)
    # THEN a comparison of the served turn and its candidate is stored
    comparison = rt.store.get(f"orgs/{ORG}/shadow_comparisons/{turn_id}")
    assert comparison is not None
    assert comparison["served_arm"] == "legacy" and comparison["candidate_arm"] == "llm"
    assert comparison["agree"]["tool"] is True  # both chose chatwork_task_create
    assert comparison["agree"]["parameters"] is False  # the legacy brain puts the whole message in the body
    assert "parameters" in comparison["mismatches"]
    assert comparison["links"]["served"] == f"charter turns show {turn_id} --org {ORG}"


def test_given_shadow_mode_when_the_session_has_a_pending_confirmation_then_no_candidate_runs(
    tmp_path, scripted_llm
):
    # GIVEN shadow mode and an announcement waiting for confirmation
    rt = make_runtime(tmp_path, llm=scripted_llm, brain_mode="shadow")
    send(rt, "全員に明日の全体会議は10時からとアナウンスして", user="u3")
    # WHEN the user answers the confirmation
    turn_id = send(rt, "はい", user="u3")
    # THEN the answer is handled by state, and no candidate or comparison exists for it
    assert rt.store.get(f"orgs/{ORG}/shadow_candidates/{turn_id}-0") is None
    assert rt.store.get(f"orgs/{ORG}/shadow_comparisons/{turn_id}") is None


def test_given_no_llm_when_shadow_mode_then_no_candidate_compares_legacy_with_itself(tmp_path):
    # GIVEN shadow mode but no LLM configured
    rt = make_runtime(tmp_path, llm=None, brain_mode="shadow")
    # WHEN a turn is served
    turn_id = send(rt, TASK)
    # THEN the user is served and no candidate was run
    assert len(replies(rt)) == 1
    assert rt.store.get(f"orgs/{ORG}/shadow_candidates/{turn_id}-0") is None
    assert rt.store.query(f"orgs/{ORG}/shadow_comparisons") == []


def test_given_a_candidate_that_hangs_when_its_timeout_passes_then_the_served_reply_is_sent_and_a_failure_recorded(
    tmp_path, scripted_llm
):
    # GIVEN shadow mode and an LLM that never answers (until the test ends)
    rt = make_runtime(tmp_path, llm=scripted_llm, brain_mode="shadow")
    rt.settings = rt.settings.model_copy(update={"shadow_timeout_seconds": 0.05})
    scripted_llm.gate = threading.Event()
    expected = _legacy_reply(tmp_path, TASK)
    # WHEN a turn is served
    turn_id = send(rt, TASK)
    # THEN the user got the legacy reply
    assert replies(rt) == [expected]
    # AND the candidate is recorded as failed (timeout), and so is its comparison
    candidate = rt.store.get(f"orgs/{ORG}/shadow_candidates/{turn_id}-0")
    assert [e["layer"] for e in candidate["errors"]][-1] == shadow.SHADOW_LAYER
    assert "timed out" in candidate["errors"][-1]["message"]
    comparison = rt.store.get(f"orgs/{ORG}/shadow_comparisons/{turn_id}")
    assert comparison["candidate_failed"] is True and comparison["all_agree"] is None


class ExplodingLLM(ScriptedLLM):
    def complete(self, request):  # type: ignore[no-untyped-def]
        raise RuntimeError("boom in the candidate")


def test_given_a_candidate_that_crashes_when_a_turn_is_served_then_the_failure_is_recorded_not_raised(
    tmp_path,
):
    # GIVEN shadow mode and a candidate LLM that raises a non-LLM error
    rt = make_runtime(tmp_path, llm=ExplodingLLM(), brain_mode="shadow")
    expected = _legacy_reply(tmp_path, TASK)
    # WHEN a turn is served
    turn_id = send(rt, TASK)
    # THEN the user got the legacy reply and nothing was dead-lettered
    assert replies(rt) == [expected]
    assert rt.store.query(f"orgs/{ORG}/failures") == []
    # AND the candidate carries the failure
    comparison = rt.store.get(f"orgs/{ORG}/shadow_comparisons/{turn_id}")
    assert comparison["candidate_failed"] is True
    assert "boom in the candidate" in comparison["candidate"]["failure"]


def test_given_canary_when_people_are_in_the_llm_share_then_they_get_no_candidate(tmp_path, scripted_llm):
    # GIVEN canary at 100 %: everyone is served by the LLM arm
    rt = make_runtime(tmp_path, llm=scripted_llm, brain_mode="canary", canary_percent=100)
    # WHEN a turn is served
    turn_id = send(rt, TASK)
    # THEN it was the LLM arm, with no shadow candidate
    served = rt.store.get(f"orgs/{ORG}/observability/{turn_id}")
    assert served["flags_arm"] == "llm" and served["flags_reason"] == "SPLIT"
    assert rt.store.get(f"orgs/{ORG}/shadow_candidates/{turn_id}-0") is None


def test_given_the_kill_switch_when_a_turn_arrives_then_no_llm_call_no_tool_and_the_fixed_message(
    tmp_path, scripted_llm
):
    # GIVEN the kill switch is on (with the LLM arm otherwise serving everyone)
    rt = make_runtime(tmp_path, llm=scripted_llm, brain_mode="llm", kill_switch=True)
    # WHEN a task is asked
    turn_id = send(rt, TASK)
    # THEN the persona's fixed message was sent, with no LLM call, no tool, no candidate
    assert replies(rt) == [rt.persona.message("kill_switch")]
    assert scripted_llm.calls == []
    assert rt.store.query(f"orgs/{ORG}/tasks") == []
    record = rt.store.get(f"orgs/{ORG}/observability/{turn_id}")
    assert record["flags_reason"] == "KILL_SWITCH" and record["arm"] == "kill_switch"
    assert rt.store.get(f"orgs/{ORG}/shadow_candidates/{turn_id}-0") is None


def test_given_a_candidate_turn_when_the_shadow_layer_sees_it_again_then_it_does_not_run_twice(tmp_path):
    # GIVEN a candidate envelope as published on turns.shadow
    rt = make_runtime(tmp_path, llm=ScriptedLLM(), brain_mode="shadow")
    send(rt, TASK)
    _, data, attrs, _ = next(p for p in rt.bus.published if p[0] == "shadow")  # type: ignore[attr-defined]
    turn = Turn.from_message(data, attrs, rt.store)
    assert turn.shadow
    # WHEN the shadow layer runs on it
    outcome = shadow.run(turn, rt)
    # THEN it is skipped
    assert outcome.outcome == "not_sampled" and outcome.reason_code == "shadow.already_candidate"


def test_given_shadow_mode_when_a_turn_is_served_then_the_session_is_exactly_what_legacy_alone_leaves(
    tmp_path, scripted_llm, wall_clock
):
    # GIVEN the same turn served by legacy alone and in shadow mode (same clock, same conversation)
    legacy = make_runtime(tmp_path, clock=wall_clock, brain_mode="legacy")
    shadowed = make_runtime(tmp_path, llm=scripted_llm, clock=wall_clock, brain_mode="shadow")
    for rt in (legacy, shadowed):
        send(rt, TASK, room="same-room")
    # THEN the candidate ran, and left the session state untouched
    assert shadowed.store.query(f"orgs/{ORG}/shadow_candidates")
    path = session_path(ORG, f"{ORG}/same-room/u1")
    assert legacy.store.get(path) is not None
    assert shadowed.store.get(path) == legacy.store.get(path)
