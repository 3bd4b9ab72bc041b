"""Shadow mode over every step on the local stack: a look-then-act request in an organisation in
shadow mode is served by the legacy brain; the LLM candidate searches (the read runs), then
proposes the completion (validated, never run); the comparison agrees on the action and the
candidate leaves no effect."""

from __future__ import annotations

import uuid

import pytest

from shared_lib.flags import FLAGS_DOC, flags_store_doc, load_flags_file
from shared_lib.tools.directory import get_person, seed_directory
from shared_lib.tools.task_backend import StoreTaskBackend, TaskDraft

pytestmark = pytest.mark.e2e


def seed_org(stack, org: str, tag: str) -> None:
    """u1 of a new organisation, with two open tasks: 資料{tag} and 見積書{tag}."""
    seed_directory(
        stack.store,
        org,
        [{"user_id": "u1", "name": "鈴木一郎", "level": 2, "department_id": "d1"}],
        {"d1": None},
    )
    me = get_person(stack.store, org, "u1")
    assert me is not None
    backend = StoreTaskBackend(stack.store)
    for i, body in enumerate((f"資料{tag}を作る（来週の定例用）", f"見積書{tag}を送る")):
        draft = TaskDraft(
            body=body,
            assignee_id=me.task_account_id,
            assignee_name=me.name,
            room_id="r1",
            created_by="u1",
            marker=f"{tag}-{i}",
        )
        stack.store.run_transaction(lambda txn, d=draft: backend.create(org, d, txn=txn))


def served_in_shadow_mode(stack, org: str) -> bool:
    """A greeting of u1's, served: whether the flags said shadow mode for the organisation."""
    resp = stack.send("http", "おはようございます〜", org=org, room="r-hello", user="u1")
    assert resp.status == 200, resp.body
    return bool(stack.record(org, str(resp.body["turn_ids"][0]))["flags_reason"] == "ORG_MODE")


def test_a_look_then_act_request_in_shadow_mode_is_compared_by_its_action_with_no_effect_of_the_candidate(
    local_stack,
):
    # GIVEN an organisation in shadow mode, and u1 with two open tasks
    tag = uuid.uuid4().hex[:5]
    org = f"shadowsteps{tag}"
    seed_org(local_stack, org, tag)
    base = load_flags_file()
    flags = base.model_copy(
        update={"org_modes": {**base.org_modes, org: "shadow"}, "version": base.version + "-shadow-steps"}
    )
    local_stack.store.set(FLAGS_DOC, flags_store_doc(flags))
    try:
        # the functions read the flags document again once their cache expired: a greeting says when
        local_stack.wait_for(lambda: served_in_shadow_mode(local_stack, org), what="shadow mode served")
        # WHEN u1 asks to look at their tasks and complete the 資料 one, while the served arm's
        # brain and executor workers are slow (stuck 3 s each, ``[[stall:LAYER]]``): the candidate
        # reads the tasks as the turn found them, before the served arm completes one (the
        # candidate runs in the shadow's own worker, which no stall marker holds)
        resp = local_stack.send(
            "http",
            f"[[stall:brain]][[stall:executor]] 自分のタスクを確認して、資料{tag}のタスクは完了にして",
            org=org,
            room="r1",
            user="u1",
        )
        assert resp.status == 200, resp.body
        turn_id = str(resp.body["turn_ids"][0])
        record = local_stack.record(org, turn_id)
        comparison = local_stack.wait_for(
            lambda: local_stack.store.get(f"orgs/{org}/shadow_comparisons/{turn_id}"),
            local_stack.budgets.steps,
            what="shadow comparison",
        )
    finally:
        local_stack.store.set(FLAGS_DOC, flags_store_doc(base))
    # THEN the legacy brain served it in one step
    assert record["arm"] == "legacy" and record["flags_reason"] == "ORG_MODE"
    # AND the candidate searched (the read ran), then proposed the completion, validated only
    candidate = local_stack.store.get(f"orgs/{org}/shadow_candidates/{turn_id}-0")
    assert [s["tools"] for s in candidate["steps"]] == [
        ["chatwork_task_search"],
        ["chatwork_task_complete"],
    ], [{k: s.get(k) for k in ("tools", "verdict", "results", "error_code")} for s in candidate["steps"]]
    assert all(r["dry_run"] and r["receipt_id"] is None for s in candidate["steps"] for r in s["results"])
    # AND the comparison agrees on the action, with the candidate's path recorded
    assert comparison["agree"]["tool"] is True and comparison["agree"]["intent"] is True
    assert comparison["agree"]["guardian_action"] is True and comparison["agree"]["authorization"] is True
    assert [s["effect"] for s in comparison["candidate"]["steps"]] == [False, True]
    # AND the candidate left no effect: the only receipts are the served arm's, 見積書 is still open
    served_receipts = sorted(r["receipt_id"] for r in record["execution_result"] if r["receipt_id"])
    receipts = sorted(i for i, _ in local_stack.store.query(f"orgs/{org}/receipts"))
    assert receipts == served_receipts
    still_open = [d["body"] for _, d in local_stack.store.query(f"orgs/{org}/tasks") if d["status"] == "open"]
    assert still_open == [f"見積書{tag}を送る"]
