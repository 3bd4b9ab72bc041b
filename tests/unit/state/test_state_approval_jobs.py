"""Approval jobs in the conversation (seed 002 §6.2–6.4, §7.3, §10.2; seed 000 §5.1.7), through
the real in-process pipeline with scripted proposals: a job per confirmation, several waiting
at once, answers that name their job, who may answer, expiry, and the record."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from shared_lib.cli.data import person_documents
from shared_lib.features.approvals import steps as confirmation
from shared_lib.features.approvals import store as jobs
from shared_lib.policy.guardian import evaluate
from shared_lib.turn.decisions import AuthDecision
from shared_lib.turn.envelope import Turn
from tests.unit.policy.policy_fakes import ORG, Pipeline, config, pipeline, tool_call

PHONE = "090-1234-5678"
ASK = f"歯医者の電話は{PHONE}だと覚えておいて"
UNSURE_MEMORY = tool_call("save_memory", {"content": f"歯医者の電話は{PHONE}"}, confidence=0.6)
ASK_TWO = "会議室はBだと覚えておいて"
UNSURE_ROOM = tool_call("save_memory", {"content": "会議室はB"}, confidence=0.6)
BROADCAST = "全員に明日の会議は10時からと伝えて"
TO_EVERYONE = tool_call("announce", {"message": "明日の会議は10時からです", "recipients": "all"})
OTHER = "今日の予定教えて"


def executed(pipe: Pipeline) -> list[dict[str, Any]]:
    return [r for r in pipe.receipts() if r.get("status", "done") == "done"]


def job(pipe: Pipeline, job_id: str) -> dict[str, Any]:
    found = jobs.get(pipe.rt.store, ORG, job_id, pipe.clock())
    assert found is not None
    return found


def events(pipe: Pipeline, name: str) -> list[dict[str, Any]]:
    return [e for r in pipe.records() for e in r["loop"]["events"] if e["event"] == name]


def waiting_ids(pipe: Pipeline, user: str = "u1") -> list[str]:
    return [a["approval_id"] for a in pipe.session(user).get("pending_actions") or []]


@pytest.fixture
def pipe(monkeypatch: pytest.MonkeyPatch) -> Pipeline:
    p = pipeline(monkeypatch)
    p.script.update({ASK: UNSURE_MEMORY, ASK_TWO: UNSURE_ROOM, BROADCAST: TO_EVERYONE})
    return p


def two_jobs(pipe: Pipeline) -> tuple[str, str]:
    """GIVEN two waiting jobs: asked, reminded once, then a new intent asks again."""
    pipe.say(ASK)
    first = waiting_ids(pipe)[-1]
    assert "さっきの確認がまだ終わってない" in pipe.say(OTHER)  # the reminder, once
    pipe.say(ASK_TWO)  # not an answer again: a new intent, the brain proposes, a second job
    assert pipe.proposed_for == [ASK, ASK_TWO]
    second = waiting_ids(pipe)[-1]
    assert waiting_ids(pipe) == [first, second] and first != second
    return first, second


def test_a_confirmation_creates_a_job_with_every_field_masked(pipe):
    reply = pipe.say(ASK)
    (job_id,) = waiting_ids(pipe)
    doc = job(pipe, job_id)
    # THEN the job carries seed 002 §6.2–6.3 and who/where/when
    assert job_id.startswith("J-") and f"確認ID: {job_id}" in reply and f"承認 {job_id}" in reply
    assert doc["status"] == "pending" and doc["requested_at"] == pipe.clock()
    assert doc["decide_by"] == pipe.clock() + timedelta(minutes=10)
    assert (doc["user_id"], doc["room_id"], doc["conversation_key"]) == ("u1", "r1", f"{ORG}/r1/u1")
    assert doc["channel"] == "http"  # where the heartbeat's reminder goes back (seed 001 §17)
    assert doc["tools"] == ["save_memory"] and doc["job_type"] and doc["turn_id"]
    assert doc["reversible"] is True and doc["impact"] and doc["targets"] and doc["summary"]
    assert doc["expires_at"] == pipe.clock() + pipe.rt.settings.retention(ORG)
    assert "cost_estimate_usd" not in doc  # no tool has an honest cost estimate
    # AND what a person reads is masked at rest
    stored = pipe.rt.store.get(jobs.job_path(ORG, job_id))
    assert PHONE not in str(stored)
    # AND the gate says whether it can be undone, with the summary
    assert pipe.rt.persona.message("gate_reversible") in reply and "【操作の要約】" in reply
    # AND the turn recorded approval.requested with the §7.3 fields
    (requested,) = events(pipe, "approval.requested")
    assert requested["job_id"] == job_id and requested["approval_status"] == "pending"
    assert requested["approval_requested_at"] and requested["approval_decided_at"] is None


def test_a_redelivered_responder_makes_one_job(pipe):
    # GIVEN a turn the guardian asks about, its responder step run twice (a redelivery)
    msg = pipe.message(ASK)
    turn = Turn.from_inbound(msg)
    turn.proposal.proposal = UNSURE_MEMORY
    turn.guardian = evaluate(UNSURE_MEMORY, registry=pipe.rt.registry, now=pipe.clock())
    turn.authorization = AuthDecision.allowed(user_level=2, required_level=1)
    first = confirmation.ask_confirmation(turn, pipe.rt, UNSURE_MEMORY.root)
    second = confirmation.ask_confirmation(turn, pipe.rt, UNSURE_MEMORY.root)
    # THEN one job, one waiting action, the same id shown both times
    (job_id,) = waiting_ids(pipe)
    assert first == second and job_id in first
    assert [d["job_id"] for _, d in pipe.rt.store.query(f"orgs/{ORG}/approval_jobs")] == [job_id]


def test_two_waiting_jobs_and_a_plain_yes_asks_which_and_decides_nothing(pipe):
    first, second = two_jobs(pipe)
    for answer in ("はい", "いいえ", "1"):
        reply = pipe.say(answer)
        assert first in reply and second in reply and "記憶の保存" in reply
    assert executed(pipe) == []
    assert job(pipe, first)["status"] == job(pipe, second)["status"] == "pending"
    assert waiting_ids(pipe) == [first, second]


def test_approve_by_id_grants_exactly_that_job_and_runs_it_once(pipe):
    first, second = two_jobs(pipe)
    pipe.say(f"承認 {first}")
    # THEN the first job's action ran, once; the second still waits
    (done,) = executed(pipe)
    assert done["tool"] == "save_memory" and "歯医者" in str(done["result"]["content"])
    assert job(pipe, first)["status"] == "granted" and job(pipe, first)["approver"] == "u1"
    assert job(pipe, second)["status"] == "pending" and waiting_ids(pipe) == [second]
    assert pipe.session()["mode"] == "confirmation_pending"
    # AND the record has the grant with the §7.3 fields
    (granted,) = events(pipe, "approval.granted")
    assert granted["job_id"] == first and granted["approver"] == "u1"
    assert granted["approval_requested_at"] and granted["approval_decided_at"] and granted["coder_output"]
    # WHEN the decided job is named again THEN it is said so and nothing runs
    reply = pipe.say(f"{first} はい")
    assert first in reply and "承認されている" in reply and len(executed(pipe)) == 1
    # AND a plain yes now answers the only job left
    pipe.say("はい")
    assert [r["result"]["content"] for r in executed(pipe)][-1] == "会議室はB"


def test_deny_by_id_denies_that_job_only(pipe):
    first, second = two_jobs(pipe)
    reply = pipe.say(f"却下 {second}")
    assert "やめておく" in reply and executed(pipe) == []
    assert job(pipe, second)["status"] == "denied" and job(pipe, first)["status"] == "pending"
    assert waiting_ids(pipe) == [first]
    assert [e["job_id"] for e in events(pipe, "approval.denied")] == [second]


@pytest.mark.parametrize(
    ("policy", "user", "room", "refusal"),
    [
        ({}, "u2", "r1", "approval_foreign"),  # no approver level: only the requester
        ({"approval": {"approver_min_level": 3}}, "u2", "r1", "approval_not_allowed"),  # level 2 < 3
        ({"approval": {"approver_min_level": 3}}, "boss", "r2", "approval_not_allowed"),  # another room
    ],
)
def test_a_person_not_allowed_is_refused_and_the_job_waits(pipe, policy, user, room, refusal):
    pipe.rt.policy = config(**policy)
    pipe.say(ASK)
    (job_id,) = waiting_ids(pipe)
    reply = pipe.say(f"承認 {job_id}", user=user, room=room)
    assert reply == pipe.rt.persona.message(refusal)
    assert executed(pipe) == [] and job(pipe, job_id)["status"] == "pending"
    assert waiting_ids(pipe) == [job_id]
    pipe.say(f"却下 {job_id}", user=user, room=room)
    assert job(pipe, job_id)["status"] == "pending"


def test_a_person_of_the_approver_level_approves_someone_elses_job_by_id(pipe):
    pipe.rt.policy = config(approval={"approver_min_level": 5})
    pipe.say(ASK)
    (job_id,) = waiting_ids(pipe)
    # WHEN the level-6 boss approves u1's job by its id in the same room
    pipe.say(f"承認 {job_id}", user="boss")
    # THEN the stored action runs once in the boss's turn, the job names the approver
    (done,) = executed(pipe)
    assert done["tool"] == "save_memory" and "歯医者" in str(done["result"]["content"])
    assert job(pipe, job_id)["status"] == "granted" and job(pipe, job_id)["approver"] == "boss"
    record = pipe.records()[-1]
    assert record["user_id"] == "boss" and record["auth_result"] == "allowed"
    assert (record["approval"]["by"], record["approval"]["proposer"]) == ("boss", "u1")
    # AND the requester's waiting entry is resolved
    assert waiting_ids(pipe) == [] and pipe.session()["mode"] == "normal"


def test_a_job_past_its_deadline_expires_and_nothing_runs(pipe):
    pipe.say(ASK)
    (job_id,) = waiting_ids(pipe)
    pipe.clock.advance(minutes=10)
    reply = pipe.say("はい")
    assert "時間切れ" in reply and job_id in reply and executed(pipe) == []
    stored = pipe.rt.store.get(jobs.job_path(ORG, job_id))
    assert stored["status"] == "expired"  # written, not only read as expired
    (expired,) = events(pipe, "approval.expired")
    assert expired["job_id"] == job_id and expired["approval_status"] == "expired"
    # WHEN it is named later THEN it is still expired and nothing runs
    assert "時間切れ" in pipe.say(f"承認 {job_id}") and executed(pipe) == []
    assert len(events(pipe, "approval.expired")) == 1


def test_an_unknown_job_id_is_said_so(pipe):
    reply = pipe.say("承認 J-ZZZZZZ")
    assert reply == pipe.rt.persona.message("approval_unknown", given="J-ZZZZZZ")
    assert executed(pipe) == []


def test_an_urgent_message_cancels_every_waiting_job(pipe):
    first, second = two_jobs(pipe)
    pipe.say("緊急！部長に電話してと伝えて")
    assert waiting_ids(pipe) == [] and executed(pipe) == []
    assert job(pipe, first)["status"] == job(pipe, second)["status"] == "denied"


def test_a_double_confirmation_job_waits_through_the_first_yes(pipe):
    pipe.say(BROADCAST)
    (job_id,) = waiting_ids(pipe)
    assert pipe.rt.persona.message("gate_irreversible") in pipe.rt.channels["http"].sent[-1].text
    pipe.clock.advance(minutes=8)
    pipe.say("はい")
    assert job(pipe, job_id)["status"] == "pending"  # the second question re-arms its deadline
    pipe.clock.advance(minutes=8)
    pipe.say(f"承認 {job_id}")
    assert [r["tool"] for r in executed(pipe)] == ["announce"]
    assert job(pipe, job_id)["status"] == "granted"


def test_the_purge_finds_the_jobs_a_person_requested(pipe):
    pipe.say(ASK)
    (job_id,) = waiting_ids(pipe)
    assert person_documents(pipe.rt.store, ORG, "u1")["approval_jobs"] == [jobs.job_path(ORG, job_id)]
    assert person_documents(pipe.rt.store, ORG, "u2")["approval_jobs"] == []
