"""The comparison over every step: what each arm did to the world (its effectful calls, all steps
together) and the decisive step's decision; reads are kept per step and compared with nothing.
And the shadow gate's figure over a recorded mix of one-step and look-then-act requests."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from shared_lib.rollout.comparison import compare
from shared_lib.rollout.report import build_report

AT = datetime(2026, 11, 25, 10, 30, tzinfo=UTC)


def step(n: int, tool: str | None, params: dict[str, Any] | None = None, **changes: Any) -> dict[str, Any]:
    """A step row as the observer records it (``steps``)."""
    return {
        "step": n,
        "output_type": "tool_call" if tool else "text_response",
        "tool_calls": [{"tool_name": tool, "parameters": params or {}}] if tool else [],
        "verdict": "allow",
        "verdict_reason": "pass",
        "authorization": "allowed" if tool else "not_applicable",
        "authorization_reason": "pass",
        "ok": True,
        **changes,
    }


def record(arm: str, *steps: dict[str, Any], turn: str = "T1") -> dict[str, Any]:
    last = steps[-1]
    return {
        "turn_id": turn,
        "org_id": "acme",
        "timestamp": AT,
        "arm": arm,
        "output_type": last["output_type"],
        "selected_tools": last["tool_calls"],
        "guardian_action": last["verdict"],
        "guardian_reason": last["verdict_reason"],
        "auth_result": last["authorization"],
        "auth_reason": last["authorization_reason"],
        "steps": list(steps),
        "final_response": "完了にしたウル🐺",
        "timings": {"brain": 3.0, "guardian": 1.0, "brain#1": 4.0, "guardian#1": 1.0},
        "errors": [],
    }


SEARCH = ("chatwork_task_search", {"assignee_name": "自分"})
COMPLETE = ("chatwork_task_complete", {"task_query": "資料を作る", "task_id": "t-m0"})


def test_given_search_then_complete_against_complete_at_once_when_compared_then_the_action_agrees():
    # GIVEN the served arm completed 「資料を作る」 at once, the candidate searched first, then completed it
    served = record("legacy", step(1, *COMPLETE))
    candidate = record("llm", step(1, *SEARCH), step(2, *COMPLETE))
    # WHEN compared
    c = compare(served, candidate)
    # THEN the tool, the parameters, the intent, the verdict and the gate all agree
    assert c["all_agree"] is True and c["mismatches"] == []
    # AND the candidate's path is recorded, its decisive step the second
    assert [s["tools"] for s in c["candidate"]["steps"]] == [
        ["chatwork_task_search"],
        ["chatwork_task_complete"],
    ]
    assert [s["effect"] for s in c["candidate"]["steps"]] == [False, True]
    assert c["candidate"]["decisive_step"] == 2 and c["served"]["decisive_step"] == 1
    # AND the decision latency counts every step of the candidate
    assert c["candidate"]["latency_ms"] == 9.0


def test_given_a_candidate_that_only_searched_when_the_served_arm_acted_then_the_tool_disagrees():
    # GIVEN the served arm deleted a task; the candidate only looked at the list and answered
    served = record("legacy", step(1, "delete_task", {"task_query": "見積書"}))
    candidate = record("llm", step(1, *SEARCH), step(2, None))
    # WHEN compared THEN it is a disagreement on what was done to the world
    c = compare(served, candidate)
    assert c["agree"]["tool"] is False and c["agree"]["intent"] is False
    assert c["candidate"]["tools"] == []


def test_given_different_reads_before_the_same_action_when_compared_then_they_agree():
    # GIVEN two paths of reads (the team's tasks, or a search twice) to the same completion
    served = record("llm", step(1, "view_team_tasks"), step(2, *COMPLETE))
    candidate = record("llm", step(1, *SEARCH), step(2, *SEARCH), step(3, *COMPLETE))
    # WHEN compared THEN they agree
    assert compare(served, candidate)["all_agree"] is True


def test_given_the_same_action_with_another_task_when_compared_then_the_parameters_disagree():
    served = record("legacy", step(1, *COMPLETE))
    other = ("chatwork_task_complete", {"task_query": "見積書を送る", "task_id": "t-m1"})
    c = compare(served, record("llm", step(1, *SEARCH), step(2, *other)))
    assert c["agree"]["tool"] is True and c["mismatches"] == ["parameters"]


def test_given_a_confirm_on_the_acting_step_when_compared_then_the_acting_steps_verdicts_are_compared():
    # GIVEN the candidate's deletion was sent to the person for confirmation, the served one allowed
    delete = ("delete_task", {"task_query": "見積書を送る"})
    served = record("legacy", step(1, *delete))
    candidate = record(
        "llm",
        step(1, *SEARCH),
        step(2, *delete, verdict="confirm", verdict_reason="destructive", authorization="not_applicable"),
    )
    # WHEN compared THEN the verdict of the acting step disagrees, the gate is not counted
    c = compare(served, candidate)
    assert set(c["mismatches"]) == {"guardian_action", "guardian_reason"}
    assert c["agree"]["authorization"] is None


def test_given_answers_without_any_action_when_compared_then_the_last_reads_are_compared():
    # GIVEN both arms only looked up the person's tasks (「自分のタスク見せて～」)
    served = record("legacy", step(1, *SEARCH))
    candidate = record("llm", step(1, *SEARCH))
    assert compare(served, candidate)["all_agree"] is True
    # AND a candidate that looked elsewhere disagrees
    assert compare(served, record("llm", step(1, "view_team_tasks")))["agree"]["tool"] is False


def recorded_mix() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """A day's recorded pairs (served, candidate): 40 one-step requests the arms agree on
    (tasks created, completed, 「こんにちは」), 15 look-then-act requests the candidate did in two
    steps, and 3 real disagreements (the candidate deleted where the served arm completed)."""
    pairs = []
    one_step = [
        step(
            1,
            "chatwork_task_create",
            {"body": "見積書を作成", "assignee_name": "田中", "limit_date": "11月27日"},
        ),
        step(1, *COMPLETE),
        step(1, None),
    ]
    for i in range(40):
        s = one_step[i % 3]
        pairs.append((record("legacy", s, turn=f"A{i}"), record("llm", s, turn=f"A{i}")))
    for i in range(15):
        pairs.append(
            (
                record("legacy", step(1, *COMPLETE), turn=f"B{i}"),
                record("llm", step(1, *SEARCH), step(2, *COMPLETE), turn=f"B{i}"),
            )
        )
    for i in range(3):
        pairs.append(
            (
                record("legacy", step(1, *COMPLETE), turn=f"C{i}"),
                record("llm", step(1, *SEARCH), step(2, "delete_task", {"task_id": "t-m0"}), turn=f"C{i}"),
            )
        )
    return pairs


def first_step_only(candidate: dict[str, Any]) -> dict[str, Any]:
    """The candidate as the one-step shadow recorded it: it stopped after its first step."""
    return record(candidate["arm"], candidate["steps"][0], turn=candidate["turn_id"])


def test_given_a_recorded_mix_when_the_gate_figure_is_computed_then_the_one_step_figure_was_biased_and_the_new_one_is_not():
    pairs = recorded_mix()
    # WHEN the tool agreement is computed as before (the candidate's first step) and now (every step)
    before = build_report([compare(s, first_step_only(c)) for s, c in pairs])["agreement"]["tool"]
    after = build_report([compare(s, c) for s, c in pairs])["agreement"]["tool"]
    # THEN before, every look-then-act request counted as a disagreement: 40/58 = 0.6897, under 0.95
    assert (before["agree"], before["total"], before["rate"]) == (40, 58, 0.6897)
    # AND now only the 3 real disagreements count: 55/58 = 0.9483 (the true rate of the mix)
    assert (after["agree"], after["total"], after["rate"]) == (55, 58, 0.9483)


def test_given_a_stored_look_then_act_pair_when_an_operator_compares_it_then_each_arms_steps_are_printed(
    tmp_path, capsys
):
    from infra import cli
    from shared_lib.adapters.sqlite_store import SQLiteStore

    # GIVEN the observer's records of a turn: legacy completed at once, the candidate searched first
    store = SQLiteStore(tmp_path / "charter.sqlite")
    store.set("orgs/acme/observability/T1", record("legacy", step(1, *COMPLETE)))
    store.set("orgs/acme/shadow_candidates/T1-0", record("llm", step(1, *SEARCH), step(2, *COMPLETE)))
    # WHEN the operator runs charter shadow compare
    code = cli.main(["shadow", "compare", "T1", "--org", "acme", "--store", str(tmp_path / "charter.sqlite")])
    out = capsys.readouterr().out
    # THEN it agrees, and the candidate's read step and its acting step (starred) are listed
    assert code == 0 and out.startswith("turn T1: agree")
    lines = [line.split() for line in out.splitlines() if line.strip().startswith("step ")]
    assert [(w[1], "*" in w, "effect" in w) for w in lines] == [
        ("1", True, True),  # the served arm's one step, which acted
        ("1", False, False),  # the candidate's search
        ("2", True, True),  # its completion, the step compared
    ]
