"""Issue 37: a worker's re-route never overrides the user's explicit command, and a re-route to
CODE needs what the router needs to adopt CODE (seed 003 §3.3 "強い証拠の再確認", seed 002 §2.4:
confidence 0.8 and strong evidence in the user's own input); a refused one is recorded."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from loop_fakes import ORG, Chain, text

from shared_lib import loop


def to(route: str, *, overall: float = 0.95) -> dict:
    """A text answer whose hand-over says the route does not fit and suggests ``route``."""
    return text(
        "この依頼はコーディング向きだと思うウル",
        overall=overall,
        loop={"needs_next_loop": False, "fit": False, "suggested_route": route},
    )


@pytest.mark.parametrize(
    "message",
    [
        "/chat タスクを見せて",
        "／ｃｈａｔ　自分のタスク見せて〜",
        "/Chat 田中さんのタスクって今なんぼある？",
        "/chat\nコードのことじゃなくて、今日のタスク教えて",
    ],
)
@pytest.mark.parametrize("suggested", ["CODE", "ANALYZE", "ops"])
def test_an_explicit_command_is_never_overridden_by_the_workers_reroute(message, suggested):
    # GIVEN the user chose the route with a command and the model suggests another
    chain = Chain([to(suggested), text("コーディングするウル")])
    # WHEN the turn runs
    reply, turn = chain.say(message)
    # THEN it stays on the user's route: one step, the refusal recorded with its reason
    assert turn.route.route == "CHAT" and turn.route.source == "command"
    assert len(chain.proposals()) == 1 and not turn.loop.reroute_used
    assert turn.loop.reroute_refused == f"{suggested.upper()}: explicit_command"
    final = turn.loop.events[-1]
    assert final["event"] == "final.route" and final["final_route"] == "CHAT"
    assert final["reroute_refused"] == f"{suggested.upper()}: explicit_command"
    assert "route.override" not in [e["event"] for e in turn.loop.events]
    assert "コーディングするウル" not in reply
    record = chain.rt.store.get(f"orgs/{ORG}/observability/{turn.turn_id}")
    assert (
        record is not None and record["loop"]["reroute_refused"] == f"{suggested.upper()}: explicit_command"
    )


@pytest.mark.parametrize(
    "message",
    [
        "ログインできないって問い合わせが来てて、原因わかる？",
        "このエラーどういう意味？「NullPointerException」って出た",
        "Pythonでcsv読むのってどうやるんだっけ",
        "Node.jsのバージョン上げたいんだけど影響ある？",
        "差分（diff）を取る方法を教えて",
    ],
)
def test_a_reroute_to_code_without_strong_evidence_in_the_users_words_is_refused(message):
    chain = Chain([to("CODE"), text("コーディングするウル")])
    _, turn = chain.say(message)
    assert turn.route.route != "CODE" and len(chain.proposals()) == 1
    assert turn.loop.reroute_refused == "CODE: no_strong_evidence"


def _decided_as_classified(message: str, answer: dict) -> loop.LoopDecision:
    """The controller's decision on a finished step, as if the router had classified the input
    as CHAT (a rule would route strong evidence to CODE before any step)."""
    chain = Chain([answer])
    _, turn = chain.say(message)
    turn.route = turn.route.model_copy(update={"route": "CHAT", "source": "classifier", "commands": []})
    turn.loop.reroute_used = False
    turn.loop.events.clear()
    return loop.decide(turn, loop.LoopLimits(), datetime.now(UTC))


@pytest.mark.parametrize(
    "message",
    [
        "main.py の import 整理してほしい",
        "これ動かん\n```python\nprint(1/0)\n```",
        'Traceback (most recent call last):\n  File "app.py", line 3, in <module>\nZeroDivisionError',
    ],
)
def test_a_reroute_to_code_with_strong_evidence_and_confidence_is_taken(message):
    decided = _decided_as_classified(message, to("CODE"))
    assert (decided.action, decided.reroute, decided.reroute_refused) == ("continue", "CODE", None)


def test_a_reroute_to_code_below_the_confidence_bar_is_refused_even_with_evidence():
    decided = _decided_as_classified("src/App.tsx のバグ直して", to("CODE", overall=0.75))
    assert decided.action == "stop" and decided.reroute is None
    assert decided.reroute_refused == "CODE: low_confidence 0.75"


def test_a_reroute_to_another_route_without_a_command_is_still_taken_once():
    chain = Chain([to("ANALYZE"), to("PLAN"), text("まとめたウル")])
    _, turn = chain.say("先月のタスク、部署ごとに傾向見たい")
    assert turn.route.route == "ANALYZE" and turn.loop.reroute_used
    assert turn.loop.reroute_refused == "PLAN: reroute_used"


@pytest.mark.parametrize("worker", ["CODE1", "code2", "Code3"])
def test_a_reroute_to_a_code_worker_is_held_to_codes_bar(worker):
    refused = _decided_as_classified("ちょっと相談なんやけど、集計のやり方を考えたい", to(worker))
    assert refused.reroute is None and refused.reroute_refused == "CODE: no_strong_evidence"
    taken = _decided_as_classified("deploy.sh を書き換えたい", to(worker))
    assert taken.reroute == "CODE"
