"""Auto-approve (seed 002 §6.4) through the real in-process pipeline: a grant within its scope
runs a confirmation without asking and records the job; anything outside it, a hard-require
operation, a double confirmation, or a grant ended by the instant OFF asks as before. The
brain's proposals are scripted."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from shared_lib.errors import ArgumentError
from shared_lib.features.auto_approve import store as auto_approve
from shared_lib.flags import REPO_FLAGS_FILE, seed_flags
from shared_lib.policy.config import DangerRule, PolicyConfig, load_policy_config
from shared_lib.turn.decisions import Verdict
from tests.unit.policy.policy_fakes import ORG, Pipeline, pipeline, tool_call

ASK = "田中さんに明日は休みとアナウンスして"
TO_TANAKA = tool_call("announce", {"message": "明日は休みです", "recipients": ["田中太郎"]})
TO_SATO = "佐藤さんに明日は休みとアナウンスして"
DELETE = "資料作成のタスクを消して"
EVERYONE = "全員に明日は休みとアナウンスして"
NOTE = "自動承認の範囲内だったから、確認せずに実行したウル"


def announcements_confirmed(base: PolicyConfig) -> PolicyConfig:
    """The organisation's policy counts every announcement a dangerous operation (seed 000's table
    does not: there only three or more recipients are confirmed), so a one-person announcement is
    a confirmation a grant can cover."""
    dangerous = {**base.dangerous_operations, "announce": DangerRule(risk="medium", action="confirm")}
    return base.model_copy(update={"dangerous_operations": dangerous})


@pytest.fixture
def pipe(monkeypatch: pytest.MonkeyPatch) -> Pipeline:
    p = pipeline(monkeypatch, policy=announcements_confirmed(load_policy_config()))
    p.script.update(
        {
            ASK: TO_TANAKA,
            TO_SATO: tool_call("announce", {"message": "明日は休みです", "recipients": ["佐藤見習"]}),
            DELETE: tool_call("delete_task", {"task_query": "資料作成"}),
            EVERYONE: tool_call("announce", {"message": "明日は休みです", "recipients": "all"}),
        }
    )
    return p


def grant(pipe: Pipeline, *, enabled: bool = True, **scope: object) -> dict[str, object]:
    return auto_approve.grant_on(
        pipe.rt.store,
        ORG,
        pipe.clock(),
        author="ops",
        policy=pipe.rt.policy.approval,
        switch=auto_approve.Switch(enabled=enabled),
        **scope,  # type: ignore[arg-type]
    )


def jobs(pipe: Pipeline) -> list[dict[str, object]]:
    return [doc for _, doc in pipe.rt.store.query(f"orgs/{ORG}/approval_jobs")]


def statuses(pipe: Pipeline) -> list[object]:
    """The statuses of the org's approval jobs: a confirmation asked is a pending job."""
    return sorted(str(j["status"]) for j in jobs(pipe))


def announcements(pipe: Pipeline) -> int:
    return len(pipe.rt.store.query(f"orgs/{ORG}/announcements"))


def test_a_grant_within_scope_runs_the_confirmation_once_and_records_the_job(pipe):
    # GIVEN a grant of announcements to 田中 (and without it the announcement is confirmed)
    assert "確認させてほしい" in pipe.say(ASK)
    pipe.say("いいえ")
    g = grant(pipe, tools=["announce"], targets=["田中*"], job_types=["chat"])
    # WHEN the same request comes again
    reply = pipe.say(ASK)
    # THEN it runs without asking, once, and the reply says it ran under auto-approve
    assert "確認させてほしい" not in reply and NOTE in reply
    assert announcements(pipe) == 1
    (record,) = [r for r in pipe.records() if r["guardian_reason"] == "approval.auto_approved"]
    assert record["guardian_action"] == "allow" and record["execution_success"] is True
    (event,) = [e for e in record["loop"]["events"] if e["event"] == "approval.auto_approved"]
    # AND the job is recorded auto_approved by that grant, with the seed 002 §7.3 fields
    (job,) = [j for j in jobs(pipe) if j["status"] == "auto_approved"]
    assert statuses(pipe) == ["auto_approved", "denied"]  # the first ask, answered いいえ
    assert job["status"] == "auto_approved" and job["approver"] == f"auto:{g['grant_id']}"
    assert job["user_id"] == "u1" and job["tools"] == ["announce"] and job["reversible"] is False
    assert "アナウンスの送信" in str(job["summary"]) and job["decided_at"] == job["requested_at"]
    assert event["job_id"] == job["job_id"] and event["approver"] == f"auto:{g['grant_id']}"
    # AND nothing waits for an answer
    assert pipe.session()["pending_action"] is None


@pytest.mark.parametrize(
    ("scope", "text", "user"),
    [
        ({"tools": ["chatwork_task_create"]}, ASK, "u1"),  # another tool
        ({"targets": ["田中*"]}, TO_SATO, "u1"),  # another target
        ({"user_id": "u2"}, ASK, "u1"),  # another person's grant
        ({"job_types": ["code"]}, ASK, "u1"),  # another job type
    ],
)
def test_outside_the_grants_scope_the_confirmation_stands(pipe, scope, text, user):
    grant(pipe, **scope)
    assert "確認させてほしい" in pipe.say(text, user=user)
    assert announcements(pipe) == 0 and statuses(pipe) == ["pending"]


def test_what_the_grant_approved_counts_as_confirmed_for_the_executor(pipe):
    # GIVEN a grant of task creation, and a task whose date has passed (confirmed once: date.past)
    text = "田中さんに見積書のタスクを2025-01-10までにお願い"
    pipe.script[text] = tool_call(
        "chatwork_task_create", {"body": "見積書", "assignee_name": "田中太郎", "limit_date": "2025-01-10"}
    )
    grant(pipe, tools=["chatwork_task_create"])
    # WHEN it is requested THEN it runs as a user's 「はい」 would have run it: the task exists
    reply = pipe.say(text)
    assert NOTE in reply and "1月10日" in reply
    assert len(pipe.rt.store.query(f"orgs/{ORG}/tasks")) == 1


def test_an_expired_grant_covers_nothing(pipe):
    grant(pipe, tools=["announce"], ttl_minutes=30)
    pipe.clock.advance(minutes=31)
    assert "確認させてほしい" in pipe.say(ASK)
    assert announcements(pipe) == 0


def test_a_hard_require_operation_always_asks_even_with_a_grant_covering_everything(pipe):
    # GIVEN a grant without any scope (every operation a grant may cover)
    grant(pipe)
    # WHEN a deletion is requested THEN it is confirmed as always
    assert "確認させてほしい" in pipe.say(DELETE)
    assert [r["response_kind"] for r in pipe.records()] == ["confirm"] and statuses(pipe) == ["pending"]
    # AND a grant cannot even name it
    with pytest.raises(ArgumentError, match="hard-require"):
        grant(pipe, tools=["delete_task"])


def test_a_double_confirmation_is_never_auto_approved(pipe):
    grant(pipe, tools=["announce"])
    assert "2回確認する" in pipe.say(EVERYONE)
    assert announcements(pipe) == 0 and statuses(pipe) == ["pending"]


def _decide(pipe: Pipeline, verdict: Verdict, proposal, **kw: object) -> auto_approve.Decision:
    return auto_approve.decide(
        verdict,
        proposal,
        [{"grant_id": "G-1", "user_id": None, "tools": [], "job_types": [], "targets": []}],
        policy=pipe.rt.policy.approval,
        switch=auto_approve.Switch(enabled=True),
        route="CHAT",
        user_id="u1",
        tool_levels={},
        **kw,  # type: ignore[arg-type]
    )


def test_public_posting_confidential_sending_and_cost_over_limit_are_hard_require(pipe):
    confirm = Verdict.confirm("danger.medium", priority=3, message="注意")
    # public posting (the policy's push_public operations)
    public = _decide(pipe, confirm, tool_call("send_to_all", {"message": "お知らせ"}))
    assert public.grant is None and public.hard_require == ("push_public",)
    # a send the guardian found confidential
    secret = confirm.with_details(covers=["danger.medium", "security.confidential"])
    sensitive = _decide(pipe, secret, TO_TANAKA)
    assert sensitive.grant is None and sensitive.hard_require == ("send_sensitive",)
    # a cost estimate over the policy's limit (1 USD), and one under it
    costly = _decide(pipe, confirm, TO_TANAKA, cost_estimate_usd=5.0)
    assert costly.grant is None and costly.hard_require == ("cost_over_limit",)
    assert _decide(pipe, confirm, TO_TANAKA, cost_estimate_usd=0.5).reason == "covered"
    # and a block is never turned into anything
    block = Verdict.block("danger.critical", priority=3, message="危険")
    assert _decide(pipe, block, TO_TANAKA).reason == "not_a_confirmation"


def test_the_instant_off_ends_every_grant_on_the_very_next_turn(pipe):
    grant(pipe, tools=["announce"])
    grant(pipe, tools=["announce"], user_id="u1")
    assert NOTE in pipe.say(ASK)
    # WHEN the organisation's grants are turned off (one write)
    auto_approve.turn_off(pipe.rt.store, ORG, pipe.clock(), by="ops", policy=pipe.rt.policy.approval)
    # THEN the very next turn asks, at the same instant
    assert "確認させてほしい" in pipe.say(ASK)
    assert announcements(pipe) == 1
    assert auto_approve.live_grants(pipe.rt.store, ORG, pipe.clock()) == []
    # AND a grant made after the OFF (even at the same clock reading) applies again
    pipe.say("いいえ")
    grant(pipe, tools=["announce"])
    assert NOTE in pipe.say(ASK)


def test_off_by_chat_beats_a_pending_confirmation_which_stays_pending(pipe):
    # GIVEN a confirmation waiting for u1's answer, and u1's own grant made afterwards
    pipe.say(TO_SATO)
    pending = pipe.session()["pending_action"]
    grant(pipe, tools=["announce"], user_id="u1")
    # WHEN u1 says 「自動承認オフ」
    reply = pipe.say("自動承認オフ")
    # THEN the OFF answers (not the reminder of the pending confirmation) and ends u1's grant
    assert "自動承認を今すぐ止めた" in reply and "さっきの確認" not in reply
    assert auto_approve.live_grants(pipe.rt.store, ORG, pipe.clock()) == []
    assert pipe.session()["pending_action"]["approval_id"] == pending["approval_id"]
    assert pipe.proposed_for == [TO_SATO]  # the brain was never asked


def test_anyone_ends_their_own_grants_and_only_level_5_ends_the_organisations(pipe):
    org_wide = grant(pipe, tools=["announce"])
    grant(pipe, tools=["announce"], user_id="u1")
    # WHEN u1 (level 2) says /auto off
    reply = pipe.say("/auto off")
    # THEN only their own grant ends, and they are told the organisation's needs level 5
    assert "あなたの自動承認" in reply and "レベル5以上" in reply
    live = auto_approve.live_grants(pipe.rt.store, ORG, pipe.clock())
    assert [g["grant_id"] for g in live] == [org_wide["grant_id"]]
    # WHEN the boss (level 6) says it THEN every grant of the organisation ends
    assert "組織の自動承認をすべて" in pipe.say("／ＡＵＴＯ　ＯＦＦ", user="boss")
    assert auto_approve.live_grants(pipe.rt.store, ORG, pipe.clock()) == []


def test_the_command_counts_only_as_the_whole_message(pipe):
    grant(pipe, tools=["announce"])
    pipe.say("自動承認オフって何？")
    assert len(auto_approve.live_grants(pipe.rt.store, ORG, pipe.clock())) == 1


def test_the_deployments_switch_off_means_no_grant_applies_and_none_can_be_made(pipe, tmp_path: Path):
    grant(pipe, tools=["announce"])
    # GIVEN the flags document with auto_approve.enabled false
    off = tmp_path / "flags.json"
    off.write_text(
        REPO_FLAGS_FILE.read_text(encoding="utf-8").replace('"enabled": true', '"enabled": false'),
        encoding="utf-8",
    )
    seed_flags(pipe.rt.store, off)
    pipe.rt.flags.invalidate()
    # THEN the request is confirmed despite the grant
    assert "確認させてほしい" in pipe.say(ASK)
    # AND no grant can be made while it is off
    with pytest.raises(ArgumentError, match="disabled"):
        grant(pipe, enabled=False)


def test_the_ceilings_of_the_switch_and_the_policy_hold():
    from shared_lib.adapters.memory_store import MemoryStore
    from shared_lib.policy.approval_config import Approval
    from tests.unit.policy.policy_fakes import NOW

    store, policy = MemoryStore(), Approval()
    capped = auto_approve.Switch(enabled=True, tools=("announce",), ttl_minutes=30)
    with pytest.raises(ArgumentError, match="ceiling"):
        auto_approve.grant_on(
            store, ORG, NOW, author="a", policy=policy, switch=capped, tools=["save_memory"]
        )
    with pytest.raises(ArgumentError, match="between 1 and 30"):
        auto_approve.grant_on(
            store, ORG, NOW, author="a", policy=policy, switch=capped, tools=["announce"], ttl_minutes=45
        )
    g = auto_approve.grant_on(
        store, ORG, NOW, author="a", policy=policy, switch=capped, tools=["announce"], ttl_minutes=30
    )
    assert g["expires_at"] - g["created_at"] == timedelta(minutes=30)
    # the default TTL is the policy's 60 minutes
    free = auto_approve.grant_on(
        store, ORG, NOW, author="a", policy=policy, switch=auto_approve.Switch(enabled=True)
    )
    assert free["expires_at"] - free["created_at"] == timedelta(minutes=60)


def test_a_policy_that_does_not_require_approval_runs_confirmations_without_a_grant_but_never_hard_require(
    monkeypatch: pytest.MonkeyPatch,
):
    # GIVEN a policy with approval.required_by_default false (seed 002 §10.2 defaults it to true)
    base = announcements_confirmed(load_policy_config())
    policy = base.model_copy(
        update={"approval": base.approval.model_copy(update={"required_by_default": False})}
    )
    p = pipeline(monkeypatch, policy=policy)
    p.script.update({ASK: TO_TANAKA, DELETE: tool_call("delete_task", {"task_query": "資料作成"})})
    # WHEN a request the guardian would confirm comes, with no grant at all
    reply = p.say(ASK)
    # THEN it runs without asking, recorded as approved by the policy itself
    assert NOTE in reply and announcements(p) == 1
    (job,) = jobs(p)
    assert job["status"] == "auto_approved" and job["approver"] == f"auto:{auto_approve.POLICY_GRANT}"
    # AND a hard-require operation still asks
    assert "確認させてほしい" in p.say(DELETE)
    assert statuses(p) == ["auto_approved", "pending"]


AGAIN = "ここからの操作は、また一つずつ確認する"


def test_a_persons_off_stops_the_organisations_grant_for_their_own_requests_until_their_own_on(pipe):
    # GIVEN the organisation's grant of announcements, under which u1's request runs unasked
    grant(pipe, tools=["announce"])
    assert NOTE in pipe.say(ASK)
    # WHEN u1 (level 2, who cannot end the organisation's grant) says /auto off
    reply = pipe.say("/auto off")
    assert AGAIN in reply and "レベル5以上" in reply
    # THEN u1's very next request is confirmed, not auto-approved
    assert "確認させてほしい" in pipe.say(ASK) and announcements(pipe) == 1
    pipe.say("いいえ")
    # AND another person's request still runs under the organisation's grant
    assert NOTE in pipe.say(ASK, user="u2") and announcements(pipe) == 2
    # AND neither another person's ON nor a grant the organisation makes later lifts u1's OFF
    assert "自動承認の範囲内なら" in pipe.say("自動承認オン", user="u2")
    pipe.clock.advance(minutes=90)  # past every grant's life: the OFF has no expiry of its own
    grant(pipe, tools=["announce"])
    assert "確認させてほしい" in pipe.say(ASK) and announcements(pipe) == 2
    pipe.say("いいえ")
    # WHEN u1 turns it on again
    on = pipe.say("／ａｕｔｏ　ｏｎ！")
    # THEN their requests run under the organisation's grant again
    assert "自動承認の範囲内なら" in on and "有効な自動承認がない" not in on
    assert NOTE in pipe.say(ASK) and announcements(pipe) == 3


def test_an_on_makes_no_grant_and_says_so_when_there_is_none(pipe):
    # GIVEN no grant at all WHEN u1 says 自動承認をオンにして THEN nothing is granted, and u1 is told
    reply = pipe.say("自動承認をオンにして。")
    assert "有効な自動承認がない" in reply
    assert auto_approve.live_grants(pipe.rt.store, ORG, pipe.clock()) == []
    assert "確認させてほしい" in pipe.say(ASK) and announcements(pipe) == 0
    assert pipe.proposed_for == [ASK]  # the command itself never reached the brain


def test_an_admins_off_ends_the_organisations_grants_and_stops_their_own_until_their_on(pipe):
    grant(pipe, tools=["announce"])
    # WHEN the boss (level 6) says 自動承認オフ
    assert "組織の自動承認をすべて" in pipe.say("自動承認オフ", user="boss")
    assert auto_approve.live_grants(pipe.rt.store, ORG, pipe.clock()) == []
    # AND the operator makes a new grant for the organisation
    grant(pipe, tools=["announce"])
    # THEN u1's requests run under it, the boss's own are asked about until the boss turns it on
    assert NOTE in pipe.say(ASK)
    assert "確認させてほしい" in pipe.say(ASK, user="boss")
    pipe.say("いいえ", user="boss")
    pipe.say("/auto on", user="boss")
    assert NOTE in pipe.say(ASK, user="boss")


def test_a_person_who_turned_it_off_is_asked_even_when_the_policy_needs_no_approval(monkeypatch):
    base = announcements_confirmed(load_policy_config())
    policy = base.model_copy(
        update={"approval": base.approval.model_copy(update={"required_by_default": False})}
    )
    p = pipeline(monkeypatch, policy=policy)
    p.script.update({ASK: TO_TANAKA})
    p.say("/auto off")
    assert "確認させてほしい" in p.say(ASK) and announcements(p) == 0
    assert NOTE in p.say(ASK, user="u2")


@pytest.mark.parametrize(
    ("text", "on", "off"),
    [
        ("/auto on", True, False),
        ("/AUTO ON", True, False),
        ("／ａｕｔｏ　ｏｎ", True, False),
        ("自動承認オン！", True, False),
        ("自動承認をオンにして。", True, False),
        ("/auto off", False, True),
        ("自動承認オンにしたらどうなる？", False, False),
        ("/auto on にしてって言ったら何が起きるの", False, False),
        ("自動承認オフにしといて〜 あと会議室も予約", False, False),
    ],
)
def test_the_on_and_off_commands_count_only_as_the_whole_message(text, on, off):
    assert auto_approve.is_on_command(text) is on
    assert auto_approve.is_off_command(text) is off
