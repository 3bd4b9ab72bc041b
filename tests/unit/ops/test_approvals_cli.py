"""``charter approvals list|show|auto on|auto off|auto status`` over the store, and the
dashboard's auto-approve OFF: the same grants the guardian reads, exit codes 0/1/2."""

from __future__ import annotations

import json

import pytest
from admin_fakes import as_
from admin_fakes import client as admin_client

from shared_lib.cli import build_parser, main
from shared_lib.features.auto_approve import store as auto_approve
from tests.unit.policy.policy_fakes import ORG, Pipeline, pipeline, tool_call
from tests.unit.state.test_state_auto_approve import grant

ASK = "田中さんに明日は休みとアナウンスして"


@pytest.fixture
def pipe(monkeypatch: pytest.MonkeyPatch) -> Pipeline:
    p = pipeline(monkeypatch)
    # three people: an announcement the guardian confirms (seed 000 §5.3.3b), so a grant can cover it
    p.script[ASK] = tool_call(
        "announce", {"message": "明日は休みです", "recipients": ["田中太郎", "田中花子", "田中一郎"]}
    )
    return p


def charter(pipe: Pipeline, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    args = build_parser().parse_args(list(argv))
    args.runtime = pipe.rt
    code = args.func(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_auto_on_then_a_turn_runs_auto_approved_and_list_and_show_tell_the_job(pipe, capsys):
    # WHEN an operator turns auto-approve on for announcements to 田中
    code, out, _ = charter(
        pipe,
        capsys,
        "approvals",
        "auto",
        "on",
        "--org",
        ORG,
        "--tools",
        "announce",
        "--targets",
        "田中*",
        "--json",
    )
    grant = json.loads(out)
    assert code == 0 and grant["tools"] == ["announce"] and grant["targets"] == ["田中*"]
    # THEN the request runs without asking
    assert "自動承認の範囲内" in pipe.say(ASK)
    # AND list shows the job auto_approved, in JSON and as a table
    code, out, _ = charter(
        pipe, capsys, "approvals", "list", "--org", ORG, "--status", "auto_approved", "--json"
    )
    (job,) = json.loads(out)["jobs"]
    assert code == 0 and job["approver"] == f"auto:{grant['grant_id']}"
    code, out, _ = charter(pipe, capsys, "approvals", "list")
    assert code == 0 and job["job_id"] in out and "auto_approved" in out and "1 job(s)" in out
    # AND show tells that one job
    code, out, _ = charter(pipe, capsys, "approvals", "show", job["job_id"], "--org", ORG, "--json")
    assert code == 0 and json.loads(out)["grant_id"] == grant["grant_id"]
    code, out, _ = charter(pipe, capsys, "approvals", "show", job["job_id"], "--org", ORG)
    assert code == 0 and "auto_approved" in out and "アナウンスの送信" in out


def test_auto_status_shows_live_grants_with_minutes_left_and_off_ends_them(pipe, capsys):
    charter(pipe, capsys, "approvals", "auto", "on", "--org", ORG, "--user", "u1", "--ttl", "30")
    pipe.clock.advance(minutes=10)
    code, out, _ = charter(pipe, capsys, "approvals", "auto", "status", "--org", ORG)
    assert code == 0 and "u1" in out and "20 min left" in out and "last OFF: never" in out
    # WHEN the operator turns it off
    code, out, _ = charter(pipe, capsys, "approvals", "auto", "off", "--org", ORG, "--author", "kazu")
    assert code == 0 and "ended" in out
    # THEN no grant is live and the last OFF is shown
    code, out, _ = charter(pipe, capsys, "approvals", "auto", "status", "--org", ORG, "--json")
    report = json.loads(out)
    assert report["grants"] == [] and report["last_off"]["by"] == "kazu" and report["enabled"] is True
    assert "確認させてほしい" in pipe.say(ASK)


def test_auto_status_names_who_turned_it_off_for_their_own_requests_until_their_on(pipe, capsys):
    # GIVEN u1 said /auto off in a chat
    pipe.say("/auto off")
    # WHEN the operator asks for the status THEN u1 is named, until u1 turns it on again
    code, out, _ = charter(pipe, capsys, "approvals", "auto", "status", "--org", ORG, "--json")
    assert code == 0 and json.loads(out)["opted_out"] == ["u1"]
    code, out, _ = charter(pipe, capsys, "approvals", "auto", "status", "--org", ORG)
    assert "until their /auto on): u1" in out
    pipe.say("自動承認オン")
    code, out, _ = charter(pipe, capsys, "approvals", "auto", "status", "--org", ORG, "--json")
    assert json.loads(out)["opted_out"] == []


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("auto", "on", "--org", ORG, "--tools", "delete_task"), "hard-require"),
        (("auto", "on", "--org", ORG, "--tools", "no_such_tool"), "unknown tool"),
        (("auto", "on", "--org", ORG, "--ttl", "99999"), "between 1 and 1440"),
        (("list", "--status", "maybe"), "--status is one of"),
    ],
)
def test_bad_input_exits_2_with_the_reason(pipe, capsys, argv, message):
    code, _, err = charter(pipe, capsys, "approvals", *argv)
    assert code == 2 and message in err
    assert auto_approve.live_grants(pipe.rt.store, ORG, pipe.clock()) == []


def test_show_of_an_unknown_job_exits_1(pipe, capsys):
    code, _, err = charter(pipe, capsys, "approvals", "show", "J-NOPE00", "--org", ORG)
    assert code == 1 and "no job J-NOPE00" in err


def test_without_a_store_every_approvals_command_exits_2(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CHARTER_HOME", str(tmp_path / ".charter"))
    for argv in (["list"], ["auto", "status", "--org", ORG], ["auto", "off", "--org", ORG]):
        assert main(["approvals", *argv]) == 2
        assert "no store configured" in capsys.readouterr().err


def test_the_dashboards_auto_off_ends_every_grant_and_keeps_its_auth(pipe):
    grant(pipe)
    c = admin_client(pipe.rt)
    auth = as_(pipe.rt, "kazu", ORG)
    body = {"org": ORG, "author": "kazu"}
    # without an operator nothing changes; nor with another organisation's operator
    assert c.post("/api/approvals/auto_off", json=body).status_code == 401
    assert (
        c.post("/api/approvals/auto_off", json=body, headers=as_(pipe.rt, "kazu", "globex")).status_code
        == 403
    )
    # nor with a body naming someone the operator is not
    named = c.post("/api/approvals/auto_off", json={**body, "author": "u-ceo"}, headers=auth)
    assert named.status_code == 403
    assert len(auto_approve.live_grants(pipe.rt.store, ORG, pipe.clock())) == 1
    # with it, every grant of the organisation ends at once, by the operator's person
    r = c.post("/api/approvals/auto_off", json={"org": ORG}, headers=auth)
    assert r.status_code == 200 and r.get_json()["off"]["by"] == "kazu"
    assert auto_approve.live_grants(pipe.rt.store, ORG, pipe.clock()) == []
    assert "確認させてほしい" in pipe.say(ASK)
