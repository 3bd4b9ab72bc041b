"""What a step says beside its output: seed 004 §7's checks (``goal_consistency``,
``constraint_check``, ``next_step``, ``prompt_pattern``), strict and recorded masked on the
record's step rows, and the Coder's plan and diff of a CODE step (seed 002 §5.1), recorded as the
event ``coder.plan_generated`` with its approval job (§7.1, §7.3). In-process chain, fake LLM."""

from __future__ import annotations

import pytest
from loop_fakes import ORG, Chain, text, tool_call
from pydantic import ValidationError

from shared_lib.ids import short_id_for
from shared_lib.observability.records import ObservabilityRecord
from shared_lib.turn.proposal import Proposal

CHECKS = {
    "goal_consistency": "yes: 田中さん(090-1234-5678)への折り返しタスクという目的どおり",
    "constraint_check": "no：期限の「明日まで」が曖昧なので確認が要る",
    "next_step": "pending_user",
    "prompt_pattern": "base_main_specialized",
}
TRACEBACK = (
    "これ直せる？\nTraceback (most recent call last):\n"
    '  File "billing/invoice.py", line 48, in total\n'
    "    return sum(x.amount for x in items)\n"
    "AttributeError: 'NoneType' object has no attribute 'amount'"
)
CODER = {
    "plan": "items に None が混ざる経路を塞ぐ。呼び出し元（担当 taro.suzuki@example.com）には影響なし。",
    "patch": "--- a/billing/invoice.py\n+++ b/billing/invoice.py\n@@ -48 +48 @@\n"
    "-    return sum(x.amount for x in items)\n+    return sum(x.amount for x in items if x is not None)",
    "risk": "low",
}


def record(chain: Chain, turn_id: str) -> ObservabilityRecord:
    doc = chain.rt.store.get(f"orgs/{ORG}/observability/{turn_id}")
    assert doc is not None
    return ObservabilityRecord.from_doc(doc)


# --------------------------------------------------------------------------- seed 004 §7, strict


def test_the_four_checks_are_read_as_given():
    p = Proposal.model_validate(text("了解ウル🐺", **CHECKS))
    assert (p.root.next_step, p.root.prompt_pattern) == ("pending_user", "base_main_specialized")
    assert p.root.goal_consistency == CHECKS["goal_consistency"]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("goal_consistency", True),  # a boolean where yes/no and the reason are due
        ("goal_consistency", "yes"),  # no reason
        ("constraint_check", "たぶん大丈夫"),  # neither yes nor no
        ("constraint_check", "yesterday's deadline holds"),  # 'yes' is not a word here
        ("next_step", "finish"),
        ("next_step", "DONE"),
        ("next_step", "pending user"),
        ("prompt_pattern", "specialized"),
        ("prompt_pattern", 1),
    ],
)
def test_a_check_off_the_seeds_format_is_a_bad_proposal(field, value):
    with pytest.raises(ValidationError):
        Proposal.model_validate(text("了解ウル🐺", **{field: value}))


def test_the_checks_are_recorded_masked_on_the_step_rows():
    # GIVEN a model that gives the four checks with a phone number in a reason
    chain = Chain([text("明日の何時までか教えてほしいウル🐺", **CHECKS)])
    # WHEN a person asks
    _, turn = chain.say("田中さんに明日までに折り返すタスク作っといて")
    # THEN the step row has them, the texts masked
    [row] = record(chain, turn.turn_id).steps
    assert row.next_step == "pending_user" and row.prompt_pattern == "base_main_specialized"
    assert row.goal_consistency is not None and row.goal_consistency.startswith("yes")
    assert "090-1234-5678" not in row.goal_consistency and "[PHONE" in row.goal_consistency
    assert row.constraint_check == CHECKS["constraint_check"]


def test_a_step_without_the_checks_records_none():
    chain = Chain([text("こんにちはウル🐺")])
    _, turn = chain.say("おつかれー")
    [row] = record(chain, turn.turn_id).steps
    assert (row.goal_consistency, row.constraint_check, row.next_step, row.prompt_pattern) == (None,) * 4


def test_a_bad_check_is_retried_once_like_any_bad_proposal():
    chain = Chain([text("了解ウル", next_step="finished"), text("了解ウル🐺", next_step="done")])
    reply, turn = chain.say("ありがと、もう大丈夫！")
    assert len(chain.proposals()) == 2 and reply == "了解ウル🐺"
    [row] = record(chain, turn.turn_id).steps
    assert row.next_step == "done"


# --------------------------------------------------------------------------- the Coder's plan


def test_a_code_steps_plan_and_diff_is_the_event_coder_plan_generated_with_its_job():
    # GIVEN a coder that answers a traceback with its plan and diff
    chain = Chain([text("None を除けば直るウル🐺", coder=CODER)])
    # WHEN the traceback is sent (the rules route it to CODE)
    _, turn = chain.say(TRACEBACK)
    assert turn.route.route == "CODE"
    # THEN the loop's events carry the plan, once, with the approval job of the step, masked
    [event] = [e for e in turn.loop.events if e["event"] == "coder.plan_generated"]
    assert event["job_id"] == short_id_for("J", f"{turn.turn_id}:{turn.step}")
    assert event["risk"] == "low" and event["need_approval"] is True and event["patch_lines"] == 5
    assert "taro.suzuki@example.com" not in event["coder_output"] and "None が混ざる" in event["coder_output"]
    # AND the record keeps it among the loop's events (§7.3 coder_output)
    rows = [e for e in record(chain, turn.turn_id).loop.events if e.event == "coder.plan_generated"]
    assert len(rows) == 1 and rows[0].job_id == event["job_id"] and rows[0].coder_output


def test_a_plan_outside_the_code_route_is_no_coder_event():
    chain = Chain([text("了解ウル🐺", coder=CODER)])
    _, turn = chain.say("今日の天気どう？")
    assert turn.route.route != "CODE"
    assert not [e for e in turn.loop.events if e["event"] == "coder.plan_generated"]


@pytest.mark.parametrize(
    "broken",
    [
        {**CODER, "need_approval": "yes"},  # a word where a boolean is due
        {**CODER, "risk": "critical"},
        {k: v for k, v in CODER.items() if k != "patch"},  # no diff
    ],
)
def test_a_broken_plan_is_a_bad_proposal_and_retried(broken):
    chain = Chain([text("直すウル", coder=broken), text("None を除けば直るウル🐺", coder=CODER)])
    _, turn = chain.say(TRACEBACK)
    assert len(chain.proposals()) == 2
    assert len([e for e in turn.loop.events if e["event"] == "coder.plan_generated"]) == 1


def test_a_coder_step_that_reads_first_records_its_plan_at_the_step_that_gave_it():
    # GIVEN a coder that searches the knowledge first, then gives its plan
    look = tool_call(
        "knowledge_search",
        {"query": "invoice.py の仕様"},
        loop={"needs_next_loop": True, "why": "仕様を確かめてから直すため", "risk": "low"},
    )
    chain = Chain([look, text("仕様どおり None を除くウル🐺", coder=CODER)])
    _, turn = chain.say(TRACEBACK)
    [event] = [e for e in turn.loop.events if e["event"] == "coder.plan_generated"]
    assert event["step"] == 2 and event["job_id"] == short_id_for("J", f"{turn.turn_id}:1")
