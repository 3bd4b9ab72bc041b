"""Skills on the whole local stack (issue 22, seed 001 §23; issue 33): the operator's path. The
fake Anthropic server's scripted model proposes a skill in chat (``infra/fake_llm/skills.py``);
the worker stores a draft only, none of its code run in the proposing person's turn; an operator
lists it and tests it in the sandbox (``charter skills test``), a level-6 person approves it with
``charter skills approve``; ``charter tools list`` shows it; a person's message runs it and the
reply carries its result; ``charter skills rollback`` turns it off and the next turn's brain is
not offered it. A skill making a network call, proposed the same way, fails the test that its
approval runs first, and is not approved."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import pytest
from test_jobs_e2e import post, replies

from shared_lib.features.skills.state.config import load_config

ORG = "demo"
APPROVER = "u-kazu"  # level 6 in the demo directory
PROPOSE = "受注金額の合計を計算するスキルを作って"
NETWORK = "為替レートを取ってくるスキルを作って"
CALL = "受注金額を合計して 1200 と 3400"
TOOL = "skill_order_total"
# a worker re-reads an organisation's skills at most this often: wait it out after a change
CACHE = load_config().registry_cache_seconds + 0.5


def version_state(stack: Any, name: str) -> str | None:
    doc = stack.store.get(f"orgs/{ORG}/skill_versions/{name}@v1") or {}
    return doc.get("state")


def after_cache(changed: float) -> None:
    """Wait until a worker's cached skills from before ``changed`` (a monotonic time) are stale."""
    time.sleep(max(0.0, changed + CACHE - time.monotonic()))


def reply_in(stack: Any, room: str) -> str:
    stack.wait_for(lambda: replies(stack, room))
    return replies(stack, room)[0]


def offered_in_proposals(stack: Any, since: dict[str, int]) -> list[list[str]]:
    """The tools of each proposal request the fake LLM peers received after ``since`` requests."""
    calls = []
    for r in (r for got in stack.llm_requests(since).values() for r in got):
        names = [str(t.get("name")) for t in (r.get("body") or {}).get("tools") or []]
        if "submit_proposal" in names:
            calls.append(names)
    return calls


@pytest.mark.e2e
def test_a_skill_proposed_in_chat_is_a_draft_tested_by_the_operator_approved_run_and_rolled_back(local_stack):
    stack, tag = local_stack, uuid.uuid4().hex[:6]
    rooms = {key: f"room-skill-{key}-{tag}" for key in ("propose", "network", "call", "gone")}
    # GIVEN a person asks for a skill, and another for a skill that fetches from the network
    post(stack, PROPOSE, rooms["propose"])
    post(stack, NETWORK, rooms["network"])
    proposed = reply_in(stack, rooms["propose"])
    # THEN the reply says a draft was saved, in the persona's words, with no internal name
    assert "下書き" in proposed and "ウル" in proposed
    assert all(w not in proposed for w in ("propose_skill", "order_total", "sandbox"))
    reply_in(stack, rooms["network"])
    # AND the worker stored both as drafts and ran neither (the draft is stored before the reply)
    listed = stack.charter("skills", "list", "--org", ORG, "--json")
    assert listed.returncode == 0, listed.stderr[-2000:]
    rows = {r["name"]: r for r in json.loads(listed.stdout)["skills"]}
    assert (rows["order_total"]["latest_state"], rows["order_total"]["active_version"]) == ("draft", None)
    assert rows["fx_rate"]["latest_state"] == "draft"
    assert stack.store.get(f"orgs/{ORG}/skill_versions/order_total@v1")["test"] is None
    # WHEN the operator tests the first in the sandbox THEN it passes
    tested = stack.charter("skills", "test", "--org", ORG, "order_total", "--json")
    assert tested.returncode == 0, tested.stdout + tested.stderr[-2000:]
    assert version_state(stack, "order_total") == "tested"
    # AND approving the network one tests it first: it fails and is not approved
    refused = stack.charter("skills", "approve", "--org", ORG, "fx_rate", "--version", "1", "--by", APPROVER)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert version_state(stack, "fx_rate") == "failed"

    # WHEN a level-6 person approves it THEN it is one of the organisation's tools
    approved = stack.charter(
        "skills", "approve", "--org", ORG, "order_total", "--version", "1", "--by", APPROVER
    )
    assert approved.returncode == 0, approved.stderr[-2000:]
    changed = time.monotonic()
    tools = stack.charter("tools", "list", "--org", ORG, "--json")
    assert tools.returncode == 0, tools.stderr[-2000:]
    assert TOOL in {row["name"] for row in json.loads(tools.stdout)}
    after_cache(changed)
    # AND a person's message runs it: the reply carries its result
    post(stack, CALL, rooms["call"])
    ran = reply_in(stack, rooms["call"])
    assert "4600" in ran and TOOL not in ran, ran

    # WHEN rolled back (its only approved version) THEN the next turn's brain is not offered it
    back = stack.charter("skills", "rollback", "--org", ORG, "order_total", "--by", APPROVER, "--json")
    assert back.returncode == 0, back.stderr[-2000:]
    assert json.loads(back.stdout)["active_version"] is None
    after_cache(time.monotonic())
    before = {fake: len(got) for fake, got in stack.llm_requests().items()}
    post(stack, CALL, rooms["gone"])
    gone = reply_in(stack, rooms["gone"])
    assert "4600" not in gone and "ウル" in gone, gone
    proposals = offered_in_proposals(stack, before)
    assert proposals and all(TOOL not in names for names in proposals)
