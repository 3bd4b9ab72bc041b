"""Shadow mode over every step of the candidate's loop, in process: a request the candidate does
in two steps (search, then act) is compared by the action; its reads ran, its effect was only
validated, and the store holds nothing of the candidate's but its own records."""

from __future__ import annotations

from rollout_fakes import ORG, ScriptedLLM, make_runtime, replies, send

from shared_lib.layers import shadow
from shared_lib.runtime import Runtime
from shared_lib.tools.directory import get_person
from shared_lib.tools.task_backend import TaskDraft
from shared_lib.turn.envelope import Turn

LOOK_THEN_DONE = "自分のタスクを確認して、資料のタスクは完了にして"
SHADOW_ONLY = ("shadow_candidates", "shadow_sides", "shadow_comparisons")


def add_task(rt: Runtime, body: str, marker: str) -> None:
    me = get_person(rt.store, ORG, "u1")
    assert me is not None
    draft = TaskDraft(
        body=body,
        assignee_id=me.task_account_id,
        assignee_name=me.name,
        room_id="r1",
        created_by="u1",
        marker=marker,
    )
    rt.store.run_transaction(lambda txn: rt.task_backend.create(ORG, draft, txn=txn))


def shadow_runtime(tmp_path, llm: ScriptedLLM) -> Runtime:
    rt = make_runtime(tmp_path, llm=llm, brain_mode="shadow", shadow_sample_percent=100)
    add_task(rt, "資料を作る（11/27の定例用）", "m0")
    add_task(rt, "見積書を送る", "m1")
    return rt


def open_tasks(rt: Runtime) -> list[str]:
    return sorted(d["body"] for _, d in rt.store.query(f"orgs/{ORG}/tasks") if d.get("status") == "open")


def test_given_shadow_mode_when_a_look_then_act_request_is_served_then_the_comparison_agrees_on_the_action(
    tmp_path, scripted_llm
):
    # GIVEN shadow mode (legacy served, the LLM candidate dry-run) and two open tasks of u1
    rt = shadow_runtime(tmp_path, scripted_llm)
    # WHEN u1 asks to look at their tasks and complete the 資料 one
    turn_id = send(rt, LOOK_THEN_DONE)
    # THEN the candidate took two steps: a search that ran, then the completion, validated only
    candidate = rt.store.get(f"orgs/{ORG}/shadow_candidates/{turn_id}-0")
    assert [s["tools"] for s in candidate["steps"]] == [["chatwork_task_search"], ["chatwork_task_complete"]]
    assert candidate["steps"][0]["results"][0]["result"]["count"] == 2
    assert [(r["dry_run"], r["receipt_id"]) for r in candidate["execution_result"]] == [(True, None)]
    # AND the comparison agrees on what was done: the tool, the intent, the verdict and the gate
    comparison = rt.store.get(f"orgs/{ORG}/shadow_comparisons/{turn_id}")
    assert all(comparison["agree"][k] for k in ("tool", "intent", "guardian_action", "authorization"))
    assert comparison["candidate"]["decisive_step"] == 2
    # AND the only effect is the served arm's: one receipt (the legacy brain's), one task done, one reply
    served = rt.store.get(f"orgs/{ORG}/observability/{turn_id}")
    assert [d for d, _ in rt.store.query(f"orgs/{ORG}/receipts")] == [
        served["execution_result"][0]["receipt_id"]
    ]
    assert open_tasks(rt) == ["見積書を送る"]
    assert len(replies(rt)) == 1


def test_given_a_served_turn_when_the_candidates_loop_runs_every_step_then_the_store_is_unchanged(
    tmp_path, scripted_llm
):
    # GIVEN a turn as the context layer handed it on, and a task the candidate will act on
    rt = shadow_runtime(tmp_path, scripted_llm)
    send(rt, LOOK_THEN_DONE)
    data, attrs = next((d, a) for t, d, a, _ in rt.bus.published if t == "contextualized")
    turn = Turn.from_message(data, attrs, rt.store)
    add_task(rt, "資料を印刷する", "m2")
    before = rt.store.dump()
    # WHEN the shadow layer runs the candidate over it
    outcome = shadow.run(turn, rt)
    # THEN the candidate searched, then proposed completing 資料を印刷する (validated, not run)
    assert outcome.outcome == "candidate"
    assert [s.proposal.tool_calls[0].tool_name for s in turn.loop.steps] == ["chatwork_task_search"]
    assert turn.proposal.proposal is not None
    assert [c.tool_name for c in turn.proposal.proposal.tool_calls] == ["chatwork_task_complete"]
    assert [r.dry_run for r in turn.execution.results] == [True]
    # AND no step of its loop wrote anything: no effect, no session, no send, no publish
    assert rt.store.dump() == before
    assert "資料を印刷する" in open_tasks(rt)


def test_given_a_candidate_that_keeps_searching_when_shadowed_then_its_loop_stops_at_the_served_limit(
    tmp_path, scripted_llm
):
    # GIVEN shadow mode and a request the scripted model answers by searching again and again
    rt = shadow_runtime(tmp_path, scripted_llm)
    # WHEN u1 asks for it
    turn_id = send(rt, "タスクを確認し続けて〜")
    # THEN the candidate's loop stopped as a served loop would, at the step limit, with no effect
    candidate = rt.store.get(f"orgs/{ORG}/shadow_candidates/{turn_id}-0")
    assert candidate["loop"]["stop_reason"] == "max_loops"
    assert len(candidate["steps"]) == rt.settings.max_steps
    assert all(s["tools"] == ["chatwork_task_search"] for s in candidate["steps"])
    assert all(r["receipt_id"] is None for s in candidate["steps"] for r in s["results"])
    served = rt.store.get(f"orgs/{ORG}/observability/{turn_id}")
    served_receipts = sorted(r["receipt_id"] for r in served["execution_result"] if r["receipt_id"])
    assert sorted(d for d, _ in rt.store.query(f"orgs/{ORG}/receipts")) == served_receipts
    assert len(replies(rt)) == 1
