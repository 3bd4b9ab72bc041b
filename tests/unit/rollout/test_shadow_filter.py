"""The shadow brain is pushed only the turns that want a candidate: the publisher marks each
turn (``candidate``, from the envelope alone), brain-shadow-sub's filter keeps the rest from it
(the embedded bus applies it as Pub/Sub does), and a marked turn the emulator pushes anyway is
declined before it is decoded. The mark agrees with the shadow layer's own decision on every
kind of turn, so the filter never drops a candidate the layer would have run."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from rollout_fakes import ORG, ScriptedLLM, make_runtime, replies, send

from shared_lib.errors import EnvelopeError
from shared_lib.layers import shadow
from shared_lib.layers.base import LayerRunner
from shared_lib.turn.envelope import Turn
from shared_lib.turn.inbound import InboundMessage
from shared_lib.turn.sections import JobSection

TASK = "田中さんに見積書を作成するタスクを明日までにお願い🙏"


def _contextualized(rt: Any) -> list[dict[str, str]]:
    return [a for t, _, a, _ in rt.bus.published if t == "contextualized"]


def _count_shadow_deliveries(rt: Any) -> list[dict[str, str]]:
    """Wrap the shadow brain's subscriber: the attributes of every message pushed to it."""
    got: list[dict[str, str]] = []
    subs = rt.bus._subs["contextualized"]
    for i, (name, sub, dlq, pred) in enumerate(subs):
        if name == "brain-shadow-sub":

            def counted(data: bytes, attrs: dict[str, str], _sub: Any = sub) -> Any:
                got.append(attrs)
                return _sub(data, attrs)

            subs[i] = (name, counted, dlq, pred)
    return got


def test_given_shadow_mode_off_when_turns_are_served_then_the_shadow_brain_is_pushed_none(tmp_path):
    # GIVEN the default flags (no shadow mode) and an LLM
    rt = make_runtime(tmp_path, llm=ScriptedLLM())
    pushed = _count_shadow_deliveries(rt)
    # WHEN a greeting, a task and small talk are served
    for text in ("おはようございます！", TASK, "月曜の夜はしんどいわぁ…😵"):
        send(rt, text)
    # THEN each got its reply, every turn was marked as wanting no candidate, and none reached the shadow brain
    assert len(replies(rt)) == 3
    assert [a["candidate"] for a in _contextualized(rt)] == ["0", "0", "0"]
    assert pushed == []


def test_given_shadow_mode_when_a_task_is_served_then_the_shadow_brain_is_pushed_it_and_runs_the_candidate(
    tmp_path, scripted_llm
):
    # GIVEN shadow mode for everyone
    rt = make_runtime(tmp_path, llm=scripted_llm, brain_mode="shadow", shadow_sample_percent=100)
    pushed = _count_shadow_deliveries(rt)
    # WHEN a task is asked
    turn_id = send(rt, TASK)
    # THEN the turn was marked, pushed to the shadow brain once, and its candidate ran
    assert [a["candidate"] for a in pushed] == ["1"]
    assert rt.store.get(f"orgs/{ORG}/shadow_candidates/{turn_id}-0") is not None
    # AND the answer to a confirmation (served from state) wants none
    send(rt, "全員に明日の全体会議は10時からとアナウンスして", user="u3")
    send(rt, "はい", user="u3")
    assert _contextualized(rt)[-1]["candidate"] == "0"


def _turn(**changes: Any) -> Turn:
    turn = Turn.from_inbound(
        InboundMessage(
            channel="http",
            org_id=ORG,
            room_id="r1",
            user_id="u1",
            text="来週の定例、部長の予定も入れといて",
            message_id="m1",
            event_id="e1",
            received_at=datetime(2026, 12, 28, 21, 30, tzinfo=UTC),
        )
    )
    turn.flags.shadow_candidate_arm = "llm"
    for path, value in changes.items():
        obj: Any = turn
        *parents, leaf = path.split("__")
        for p in parents:
            obj = getattr(obj, p)
        setattr(obj, leaf, value)
    return turn


KINDS = {
    "sampled": {},
    "not sampled": {"flags__shadow_candidate_arm": None},
    "legacy candidate": {"flags__shadow_candidate_arm": "legacy"},
    "kill switch": {"flags__kill_switch": True},
    "pending confirmation": {"context__pending_action": {"tool": "announce"}},
    "local only": {"route__local_only": True},
    "a later step": {"step": 2},
    "a candidate itself": {"shadow": True},
    "a delegated job": {"job": JobSection(job_id="j1", parent_turn_id="t0")},
}


@pytest.mark.parametrize("kind", KINDS)
def test_the_mark_agrees_with_the_shadow_layer_on_every_kind_of_turn(tmp_path, kind: str) -> None:
    rt = make_runtime(tmp_path, llm=ScriptedLLM())  # an LLM: the candidate arm can run
    turn = _turn(**KINDS[kind])
    marked = turn.attributes("context")["candidate"]
    assert marked == ("1" if shadow.skip_reason(turn, rt) is None else "0"), kind


def test_given_a_marked_turn_pushed_anyway_then_it_is_declined_without_being_decoded(tmp_path) -> None:
    # GIVEN the shadow brain's runner (the emulator ignores filters and pushes every turn)
    rt = make_runtime(tmp_path, llm=ScriptedLLM())
    runner = LayerRunner(shadow.LAYER, rt)
    # WHEN a message marked as wanting no candidate comes, even one whose body is not a turn
    # THEN it is answered not_sampled
    assert runner.handle(b"not json at all", {"candidate": "0", "schema_version": "1"}) == "not_sampled"
    # AND one without the mark (a publisher of an earlier revision) is decoded as ever
    with pytest.raises(EnvelopeError):
        runner.handle(b"not json at all", {"schema_version": "1"})
    data, attrs = _turn(**{"flags__shadow_candidate_arm": None}).to_message("context")
    attrs.pop("candidate")
    assert runner.handle(data, attrs) == "not_sampled"
