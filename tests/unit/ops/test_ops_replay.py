"""``charter replay``: today's guardian, authorization and dry-run executor on a recorded proposal."""

from __future__ import annotations

from datetime import timedelta

import pytest
from ops_fakes import ORG, TASK_CREATE, TASK_DONE, policy_file, send

from shared_lib.ops.replay import ReplayError, replay
from shared_lib.rollout.overrides import write_override
from tests.conftest import configure_from_env


def test_a_raised_confidence_threshold_changes_the_verdict_without_calling_the_llm(
    rt, scripted_llm, tmp_path, monkeypatch
):
    # GIVEN a recorded task creation the guardian allowed (confidence 0.9 over the 0.7 "medium" threshold)
    turn_id = send(rt, TASK_CREATE)
    calls_before = len(scripted_llm.calls)
    # WHEN the configuration raises the threshold to 0.95 and the turn is replayed
    monkeypatch.setenv("CHARTER_POLICY", str(policy_file(tmp_path, confidence={"medium": 0.95})))
    configure_from_env()
    rep = replay(rt, turn_id)
    # THEN the changed verdict is reported, the tool would no longer run, and no model was asked
    assert rep.recorded.guardian == "allow/pass"
    assert rep.replayed.guardian.startswith("confirm/")
    assert rep.recorded.execution == "executed" and rep.replayed.execution.startswith(
        "skipped:guardian.confirm"
    )
    assert {d.stage for d in rep.differences} >= {"guardian", "execution"}
    assert len(scripted_llm.calls) == calls_before and rep.llm_calls == 0


def test_with_todays_configuration_unchanged_nothing_differs(rt):
    turn_id = send(rt, TASK_DONE)
    rep = replay(rt, turn_id, org=ORG)
    assert not rep.changed and rep.replayed.tools == rep.recorded.tools


def test_replay_writes_nothing_and_publishes_nothing(rt):
    # GIVEN a recorded turn and the store as it is
    turn_id = send(rt, TASK_DONE)
    before = rt.store.dump()
    published = len(rt.bus.published)
    # WHEN it is replayed
    replay(rt, turn_id)
    # THEN the store and the bus are untouched (the dry-run executor wrote to its overlay only)
    assert rt.store.dump() == before and len(rt.bus.published) == published


def test_todays_kill_switch_shows_as_a_flags_difference(rt):
    turn_id = send(rt, TASK_DONE)
    write_override(
        rt.store, kill_switch=True, ttl=timedelta(hours=1), author="ops", reason="drill", now=rt.clock()
    )
    rt.flags.invalidate()
    rep = replay(rt, turn_id)
    stages = {d.stage: d for d in rep.differences}
    assert (
        stages["flags"].replayed == "legacy/KILL_SWITCH" and rep.replayed.execution == "skipped:kill_switch"
    )


def test_an_unknown_turn_cannot_be_replayed(rt):
    with pytest.raises(ReplayError):
        replay(rt, "01UNKNOWNTURN0000000000000")
