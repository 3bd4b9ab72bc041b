"""``charter jobs list|show|cancel``, the dashboard's jobs API and the watchdog sweep (issue 22)
over the in-process chain: an operator's cancel stops a live job and tells its requester once;
a job already over cannot be cancelled (exit 1); the sweep republishes a lost job and times out
a stalled one, reporting it once."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "loop"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ops"))
from admin_fakes import as_, client
from loop_fakes import ORG, Chain, Clock, store_job, text

from shared_lib.cli import main
from shared_lib.features.jobs import cli as jobs_cli
from shared_lib.features.jobs import state as agent_jobs
from shared_lib.features.jobs import steps as job_turns

NOW = datetime(2026, 11, 25, 3, 0, tzinfo=UTC)


@pytest.fixture
def chain(monkeypatch: pytest.MonkeyPatch) -> Chain:
    c = Chain([text("期限切れは2件ウル🐺")], clock=Clock(NOW))
    monkeypatch.setattr(jobs_cli, "runtime_for", lambda _args: c.rt)
    return c


def queued(chain: Chain, job_id: str = "job-a", **changes: Any) -> dict[str, Any]:
    return store_job(chain.rt, job_id, "期限切れタスクを集めて", **changes)


def test_cancel_of_a_queued_job_stops_it_tells_the_requester_once_and_a_second_cancel_is_exit_1(
    chain: Chain, capsys: pytest.CaptureFixture[str]
) -> None:
    queued(chain)
    assert main(["jobs", "cancel", "--org", ORG, "job-a", "--by", "ops"]) == 0
    job = agent_jobs.get(chain.rt.store, ORG, "job-a")
    assert job is not None and job["status"] == "cancelled" and job["cancelled_by"] == "ops"
    told = chain.rt.persona.message("job_cancelled_operator", task="期限切れタスクを集めて")
    assert chain.replies() == [told]
    capsys.readouterr()
    assert main(["jobs", "cancel", "--org", ORG, "job-a"]) == 1
    assert capsys.readouterr().err.strip() == "charter: error: job job-a is already cancelled"
    # its turn, published late, begins, finds the job over, runs nothing and tells nobody again
    job_turns.publish(chain.rt, job)
    assert chain.replies() == [told] and chain.proposals() == []


def test_list_and_show(chain: Chain, capsys: pytest.CaptureFixture[str]) -> None:
    queued(chain, "job-a")
    queued(chain, "job-b", status="succeeded", result={"result": "まとめ"})
    assert main(["jobs", "list", "--status", "queued", "--json"]) == 0
    assert [j["job_id"] for j in json.loads(capsys.readouterr().out)["jobs"]] == ["job-a"]
    assert main(["jobs", "show", "--org", ORG, "job-b"]) == 0
    out = capsys.readouterr().out
    assert "succeeded" in out and "まとめ" in out and "期限切れタスクを集めて" in out


def test_the_sweep_republishes_a_lost_job_and_times_out_a_stalled_one_each_once(chain: Chain) -> None:
    queued(chain, "job-lost")
    queued(chain, "job-stalled", status="running", heartbeat_at=NOW)
    clock: Clock = chain.rt.clock  # type: ignore[assignment]
    clock.now = NOW + timedelta(seconds=agent_jobs.load_limits().alive_timeout_seconds)
    # WHEN the minute's task runs twice
    first = client(chain.rt).post("/tasks/jobs/watchdog").get_json()["result"]
    second = client(chain.rt).post("/tasks/jobs/watchdog").get_json()["result"]
    # THEN the lost one ran (its turn, the same id) and reported; the stalled one timed out, told once
    nothing_due = {"reports_due": 0, "reported": 0, "reports_given_up": 0}
    assert first == {"seen": 2, "republished": 1, "timed_out": 1} | nothing_due
    assert second == {"seen": 0, "republished": 0, "timed_out": 0} | nothing_due
    lost = agent_jobs.get(chain.rt.store, ORG, "job-lost")
    stalled = agent_jobs.get(chain.rt.store, ORG, "job-stalled")
    assert lost is not None and lost["status"] == "succeeded"
    assert stalled is not None and (stalled["status"], stalled["reason"]) == ("timed_out", "no_heartbeat")
    timed_out = chain.rt.persona.message("job_timed_out", task="期限切れタスクを集めて")
    assert chain.replies().count(timed_out) == 1
    assert (
        sum(
            r.startswith("お願いされていた「期限切れタスクを集めて」の件、まとまった")
            for r in chain.replies()
        )
        == 1
    )


def test_the_dashboard_lists_and_cancels_as_the_operators_own_person(chain: Chain) -> None:
    queued(chain)
    web = client(chain.rt)
    auth = as_(chain.rt, "u-ops", ORG)
    assert web.post("/api/jobs/job-a/cancel", json={"org": ORG}).status_code == 401
    listed = web.get("/api/jobs", query_string={"org": ORG}, headers=auth).get_json()
    assert [j["job_id"] for j in listed["jobs"]] == ["job-a"]
    done = web.post("/api/jobs/job-a/cancel", json={"org": ORG}, headers=auth)
    assert done.status_code == 200 and done.get_json()["job"]["status"] == "cancelled"
    assert agent_jobs.get(chain.rt.store, ORG, "job-a")["cancelled_by"] == "u-ops"
    again = web.post("/api/jobs/job-a/cancel", json={"org": ORG, "by": "u-ops"}, headers=auth)
    assert again.status_code == 409
    assert web.post("/api/jobs/job-x/cancel", json={"org": ORG}, headers=auth).status_code == 404


@pytest.mark.parametrize("named", ["", "u-ceo", "u-ops"])
def test_another_organisations_credential_cancels_nothing_whoever_the_body_names(
    chain: Chain, named: str
) -> None:
    # GIVEN a live job of ORG and an operator credential of another organisation (even a platform one)
    queued(chain)
    web = client(chain.rt, local=False)
    other = as_(chain.rt, "u-ops", "globex", platform=True)
    # WHEN it cancels ORG's job, in the name of anyone
    r = web.post("/api/jobs/job-a/cancel", json={"org": ORG, "by": named}, headers=other)
    # THEN 403, and the job is untouched
    assert r.status_code == 403 and r.get_json()["error"] == "other_organisation"
    assert agent_jobs.get(chain.rt.store, ORG, "job-a")["status"] == "queued"
    # AND it cannot read ORG's jobs either, unless it is a platform operator
    mine = as_(chain.rt, "u-ops", "globex")
    assert web.get("/api/jobs", query_string={"org": ORG}, headers=mine).status_code == 403


def test_turns_show_of_a_jobs_turn_shows_its_job(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from shared_lib.cli import operations

    c = Chain([text("期限切れは2件ウル🐺")])
    monkeypatch.setattr(operations, "runtime_for", lambda _args: c.rt)
    job = queued(c)
    job_turns.publish(c.rt, job)
    assert main(["turns", "show", job["turn_id"], "--org", ORG, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)["job"]
    assert shown["job_id"] == "job-a" and shown["status"] == "succeeded" and shown["user_id"] == "u1"
