"""Delegated jobs on the in-process chain (issue 22, seed 001 §15): the parent turn delegates,
the job runs as a turn of its own as its requester, inside its own budget, and reports into the
parent's room once. A fake LLM port answers every proposal call in order: the parent's first,
then the job's steps."""

from __future__ import annotations

from typing import Any

from loop_fakes import LOOK, ORG, SEARCH, Chain, text, tool_call

from shared_lib.features.jobs import state as agent_jobs
from shared_lib.turn.envelope import Turn

DELEGATE = tool_call("delegate_task", {"task": "営業チームの期限切れタスクを集めて要約して"})
AGAIN = tool_call("chatwork_task_search", {"assignee_name": "自分"}, loop=LOOK)


def jobs(chain: Chain) -> list[dict[str, Any]]:
    return agent_jobs.list_jobs(chain.rt.store, ORG)


def job_turn(chain: Chain) -> Turn:
    (job,) = jobs(chain)
    return chain.completed(job["turn_id"])


def test_a_delegated_job_runs_as_its_requester_and_reports_into_the_parents_room_once():
    # GIVEN the parent delegates, the job searches then answers with a summary
    chain = Chain([DELEGATE, SEARCH, text("期限切れは2件で、資料と見積書ウル🐺")])
    # WHEN u1 asks
    _, parent = chain.say("営業チームの期限切れタスクを集めて要約して")
    # THEN the parent's reply says the job started; the report follows in the same room, once
    replies = chain.replies()
    started = chain.rt.persona.message("job_started", task="営業チームの期限切れタスクを集めて要約して")
    assert started in replies and "delegate_task" not in "".join(replies)
    (job,) = jobs(chain)
    assert job["status"] == "succeeded" and job["user_id"] == "u1" and job["steps"] == 2
    assert job["parent_turn_id"] == parent.turn_id and job["room_id"] == "r1"
    report = [r for r in replies if r.startswith("お願いされていた「営業チームの期限切れタスク")]
    assert len(report) == 1 and "期限切れは2件" in report[0]
    assert job["result"]["result"].startswith("期限切れは2件") and "needs_next_loop" in job["result"]
    turn = job_turn(chain)
    assert turn.user_id == "u1" and turn.job is not None and turn.job.job_id == job["job_id"]
    assert turn.loop.steps[0].results[0].tool_name == "chatwork_task_search"


def test_a_job_that_keeps_asking_for_steps_is_cancelled_at_its_step_limit_and_says_so():
    chain = Chain([tool_call("delegate_task", {"task": "ずっと調べ続けて", "max_steps": 2})] + [AGAIN] * 6)
    chain.say("ずっと調べ続けて")
    (job,) = jobs(chain)
    assert job["max_steps"] == 2 and job["status"] == "cancelled" and job["reason"] == "step_limit"
    turn = job_turn(chain)
    assert len(turn.loop.steps) == 1 and turn.loop.stop_reason == "job.step_limit"
    stopped = chain.rt.persona.message("job_stopped_step_limit", task="ずっと調べ続けて")
    assert chain.replies().count(stopped) == 1


def test_a_members_job_asking_for_a_tool_above_their_level_is_denied_and_runs_nothing():
    # u2 is level 2; the whole staff list needs level 5
    chain = Chain([DELEGATE, tool_call("view_all_users", {})])
    chain.say("営業チームの期限切れタスクを集めて要約して", user="u2")
    (job,) = jobs(chain)
    assert job["status"] == "denied" and job["user_id"] == "u2"
    turn = job_turn(chain)
    assert turn.authorization is not None and turn.authorization.result == "denied"
    assert turn.execution.results == []
    assert (
        chain.rt.persona.message("job_denied", task="営業チームの期限切れタスクを集めて要約して")
        in chain.replies()
    )


def test_a_job_never_delegates_again_the_guardian_blocks_it():
    chain = Chain([DELEGATE, DELEGATE])
    chain.say("営業チームの期限切れタスクを集めて要約して")
    assert len(jobs(chain)) == 1  # the job's own delegation made no second job
    turn = job_turn(chain)
    assert turn.guardian is not None and turn.guardian.reason_code == agent_jobs.NESTED
    assert turn.execution.results == [] and jobs(chain)[0]["status"] == "failed"


def test_a_job_asking_for_a_confirmation_ends_without_asking_anyone():
    chain = Chain([DELEGATE, tool_call("delete_task", {"task_query": "資料"})])
    chain.say("営業チームの期限切れタスクを集めて要約して")
    (job,) = jobs(chain)
    assert job["status"] == "failed" and job["reason"].startswith("needs_user")
    assert len(chain.tasks()) == 2  # nothing deleted
    sessions = [d for _, d in chain.rt.store.query(f"orgs/{ORG}/sessions")]
    assert sessions and all(not d.get("pending_actions") and d["mode"] == "normal" for d in sessions)
    stopped = chain.rt.persona.message(
        "job_needs_confirmation", task="営業チームの期限切れタスクを集めて要約して"
    )
    assert chain.replies()[-1] == stopped


def test_a_job_cancelled_between_its_steps_runs_no_tool_of_its_next_step_and_reports_the_cancel_once():
    def cancel_then_create(request: Any) -> dict[str, Any]:
        (job,) = jobs(chain)
        agent_jobs.cancel(chain.rt.store, ORG, job["job_id"], by="ops", now=chain.rt.clock())
        return tool_call("chatwork_task_create", {"body": "新しいタスク", "assignee_name": "自分"})

    chain = Chain([DELEGATE, SEARCH, cancel_then_create])
    chain.say("営業チームの期限切れタスクを集めて要約して")
    (job,) = jobs(chain)
    assert job["status"] == "cancelled" and job["reason"] == "operator" and job["cancelled_by"] == "ops"
    turn = job_turn(chain)
    assert turn.execution.skipped_reason == "job.not_running" and turn.execution.results == []
    assert sorted(chain.tasks()) == sorted(["資料を作る", "見積書を送る"])  # nothing created
    stopped = chain.rt.persona.message(
        "job_cancelled_operator", task="営業チームの期限切れタスクを集めて要約して"
    )
    assert chain.replies().count(stopped) == 1


def test_the_gate_denies_a_delegation_proposed_in_a_jobs_turn_even_past_the_guardian():
    from shared_lib.layers import authorizer
    from shared_lib.turn.decisions import Verdict
    from shared_lib.turn.proposal import Proposal

    chain = Chain([DELEGATE, text("まとめたウル🐺")])
    chain.say("営業チームの期限切れタスクを集めて要約して")
    # GIVEN a job's turn proposing to delegate, and a guardian that let it through
    turn = job_turn(chain)
    turn.proposal.proposal = Proposal.model_validate(DELEGATE)
    turn.guardian = Verdict.allow()
    # WHEN the Authorization Gate's stage runs
    outcome = authorizer.run(turn, chain.rt)
    # THEN it denies: a sub-agent never delegates
    assert outcome.outcome == "denied" and turn.authorization is not None
    assert turn.authorization.result == "denied" and turn.authorization.reason_code == agent_jobs.NESTED
    turn.job = None  # the same proposal in a person's own turn is theirs to make
    assert authorizer.run(turn, chain.rt).outcome == "allowed"


def test_a_job_whose_cost_passed_its_limit_is_cancelled_before_another_step():
    from shared_lib.ports import LLMUsage

    cheap, dear = (
        LLMUsage(input_tokens=100, output_tokens=50),
        LLMUsage(input_tokens=400_000, output_tokens=50_000),
    )
    chain = Chain([DELEGATE, SEARCH, AGAIN, text("まとめたウル🐺")], usages=[cheap, dear])
    chain.say("営業チームの期限切れタスクを集めて要約して")
    (job,) = jobs(chain)
    assert (job["status"], job["reason"]) == ("cancelled", "cost_limit")
    assert job["cost_usd"] > job["max_cost_usd"] and job["steps"] == 1
    stopped = chain.rt.persona.message(
        "job_stopped_cost_limit", task="営業チームの期限切れタスクを集めて要約して"
    )
    assert chain.replies().count(stopped) == 1


def test_a_job_delegated_in_a_thread_reports_in_that_thread():
    from loop_fakes import inbound

    from shared_lib.layers.ingress import accept

    chain = Chain([DELEGATE, text("まとめたウル🐺")])
    accept(
        chain.rt,
        inbound("営業チームの期限切れタスクを集めて要約して", "e-th").model_copy(
            update={"thread_id": "th-1"}
        ),
    )
    sent = chain.rt.channels["http"].sent  # type: ignore[attr-defined]
    report = [r for r in sent if r.text.startswith("お願いされていた「")]
    assert len(report) == 1 and report[0].thread_id == "th-1" and report[0].room_id == "r1"
    assert jobs(chain)[0]["thread_id"] == "th-1"


def test_a_jobs_turn_is_recorded_with_its_job_and_parent_turn_and_turns_show_names_them(
    monkeypatch: Any, capsys: Any
):
    import json

    from shared_lib.cli import main, operations
    from shared_lib.observability.records import ObservabilityRecord

    # GIVEN u1's turn delegated a job that answered
    chain = Chain([DELEGATE, text("期限切れは2件ウル🐺")])
    _, parent = chain.say("営業チームの期限切れタスクを集めて要約して")
    (job,) = jobs(chain)
    # WHEN the observer recorded both turns (the store's record and the row streamed to BigQuery)
    record = chain.rt.store.get(f"orgs/{ORG}/observability/{job['turn_id']}")
    streamed = [
        json.loads(d)
        for t, d, a, _ in chain.rt.bus.published  # type: ignore[attr-defined]
        if t == "events" and a.get("event_kind") == "turn_record"
    ]
    rows = {r["turn_id"]: ObservabilityRecord.model_validate(r) for r in streamed}
    # THEN the job's turn names its job and the parent turn; the person's own turn names none
    assert record is not None and (record["job_id"], record["parent_turn_id"]) == (
        job["job_id"],
        parent.turn_id,
    )
    assert (rows[job["turn_id"]].job_id, rows[job["turn_id"]].parent_turn_id) == (
        job["job_id"],
        parent.turn_id,
    )
    assert (rows[parent.turn_id].job_id, rows[parent.turn_id].parent_turn_id) == (None, None)
    # AND charter turns list/show carry it
    monkeypatch.setattr(operations, "runtime_for", lambda _args: chain.rt)
    assert main(["turns", "list", "--org", ORG, "--json"]) == 0
    listed = {r["record_id"]: r for r in json.loads(capsys.readouterr().out)}
    assert listed[job["turn_id"]]["parent_turn_id"] == parent.turn_id
    assert main(["turns", "show", job["turn_id"], "--org", ORG]) == 0
    assert f"job        {job['job_id']}  delegated by turn {parent.turn_id}" in capsys.readouterr().out
