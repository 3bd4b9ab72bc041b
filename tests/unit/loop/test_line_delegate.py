"""LINE input starts in CHAT (seed 002 §2.6 ``line_forced_chat``) and work for another route is
handed on only by the conversation model's DELEGATE protocol, which the loop controller takes
as its one re-route; the protocol's lines never reach the person. On the in-process chain with a
fake LLM port (no mocks of the product)."""

from __future__ import annotations

import pytest
from loop_fakes import Chain, text

from shared_lib.layers.ingress import accept
from shared_lib.turn.envelope import Turn

TRACEBACK = (
    "これ直せる？\n"
    "Traceback (most recent call last):\n"
    '  File "app/main.py", line 12, in <module>\n'
    "    total = sum(rows)\n"
    "TypeError: unsupported operand type(s) for +: 'int' and 'str'"
)


def on_line(chain: Chain, message: str) -> tuple[str, Turn]:
    """One LINE message of u1 through the chain: (the reply sent on LINE, the completed turn)."""
    from brain_fakes import inbound

    chain.n += 1
    msg = inbound(message, f"line-{chain.n}").model_copy(update={"channel": "line"})
    turn_id = accept(chain.rt, msg)
    assert turn_id is not None
    return chain.rt.channels["line"].sent[-1].text, chain.completed(turn_id)  # type: ignore[attr-defined]


def delegating(route: str, task: str, before: str = "了解ウル🐺 直し方を考えるウル！", **extra):
    return text(f"{before}\nDELEGATE: {route}\nTASK: {task}", **extra)


def test_a_line_message_with_strong_code_evidence_starts_in_chat_without_asking_the_classifier():
    # GIVEN a chain whose model answers plainly
    chain = Chain([text("見てみるウル🐺")])
    # WHEN a traceback, which the rule dictionary routes to CODE elsewhere, arrives on LINE
    _, turn = on_line(chain, TRACEBACK)
    # THEN the route is CHAT, fixed by the channel, and no classifier call was made
    assert (turn.route.route, turn.route.source, turn.route.forced) == ("CHAT", "channel", "line_forced_chat")
    assert turn.loop.events[0]["event"] != "route.override" and chain.llm.calls("classification") == []
    # AND the same text on another channel is CODE by the rules (the front router still decides there)
    _, http_turn = Chain([text("見てみるウル🐺")]).say(TRACEBACK)
    assert http_turn.route.route == "CODE" and http_turn.route.forced is None


def test_a_delegation_is_taken_as_the_one_reroute_and_its_lines_never_reach_the_person():
    # GIVEN the conversation model delegates the traceback to the coder, then the coder answers
    task = "app/main.py の TypeError を直す差分を作る（連絡先 taro.suzuki@example.com）"
    chain = Chain(
        [
            delegating("CODE3", task),
            text("rows を int にそろえる差分ウル🐺\n```diff\n-sum(rows)\n+sum(map(int, rows))\n```"),
        ]
    )
    # WHEN it arrives on LINE
    reply, turn = on_line(chain, TRACEBACK)
    # THEN a second step ran on CODE and its answer is the one reply
    assert len(chain.proposals()) == 2 and turn.route.route == "CODE" and turn.loop.reroute_used
    assert "sum(map(int, rows))" in reply and "DELEGATE" not in reply and "TASK" not in reply
    assert len(chain.rt.channels["line"].sent) == 1  # type: ignore[attr-defined]
    # AND the override is recorded as the DELEGATE hand-over, its task masked
    [override] = [e for e in turn.loop.events if e["event"] == "route.override"]
    assert (
        override["via"] == "DELEGATE" and override["coder"] == "CODE3" and override["final_route"] == "CODE"
    )
    assert "taro.suzuki@example.com" not in override["task"] and "TypeError" in override["task"]
    # AND the coder's step was not told the protocol again (it is the CODE route's turn now)
    second = chain.proposals()[1]
    assert "DELEGATE: PLAN" not in str(second.system)
    assert "DELEGATE: PLAN" in str(chain.proposals()[0].system)


@pytest.mark.parametrize(
    ("route", "expected"),
    [("PLAN", "PLAN"), ("analyze", "ANALYZE"), ("ＯＰＳ", "OPS"), ("RESEARCH", "RESEARCH")],
)
def test_each_route_of_the_protocol_is_delegated_as_written(route, expected):
    chain = Chain([delegating(route, "来週の展示会の段取りを整理する", overall=0.9), text("まとめたウル🐺")])
    _, turn = on_line(chain, "来週の展示会、準備なにからやればいいかな〜")
    assert turn.route.route == expected and len(chain.proposals()) == 2


def test_a_delegation_to_code_without_the_coders_confidence_is_not_taken_and_the_person_reads_why():
    # GIVEN a model that delegates coding while unsure (CODE needs 0.8, seed 002 §2.4)
    chain = Chain([delegating("CODE", "main.py を直す", before="", overall=0.6)])
    # WHEN the message arrives on LINE
    reply, turn = on_line(chain, "なんか動かない。直しといて")
    # THEN no second step runs, and the reply is the catalogue's word, never the protocol
    assert len(chain.proposals()) == 1 and turn.route.route == "CHAT" and not turn.loop.reroute_used
    assert "DELEGATE" not in reply and "TASK" not in reply and "ウル" in reply
    assert reply == chain.rt.persona.message("route.delegation_not_taken")


@pytest.mark.parametrize(
    "block",
    [
        "DELEGATE: DEPLOY\nTASK: 本番に出す",  # not a route of the protocol
        "DELEGATE: CODE\nTASK: ",  # an empty task
        "DELEGATE: CODE",  # no task
        "DELEGATE: CODE\nDELEGATE: PLAN\nTASK: 直す",  # two targets
    ],
)
def test_a_broken_block_delegates_nothing_is_a_worker_failure_and_shows_no_protocol(block):
    chain = Chain([text(f"確認するウル🐺\n{block}")])
    reply, turn = on_line(chain, "このエラーみてほしい、さっきから動かないの😭")
    assert len(chain.proposals()) == 1 and turn.loop.stop_reason == "worker_failure"
    assert "invalid_worker_output: delegate" in turn.loop.stop_detail
    assert reply == "確認するウル🐺"


def test_a_task_line_in_an_ordinary_reply_is_text_and_other_channels_never_read_the_protocol():
    # GIVEN a LINE reply that lists a task in English, without a DELEGATE line
    chain = Chain([text("今日の予定ウル🐺\nTask: 見積書を送る")])
    reply, turn = on_line(chain, "きょうやること教えて")
    assert reply == "今日の予定ウル🐺\nTask: 見積書を送る" and turn.loop.stop_reason == "done"
    # AND on plain HTTP a DELEGATE line is not a hand-over (the front router decided the route)
    chain = Chain([delegating("CODE", "直す")])
    _, turn = chain.say("今日はいい天気だね")
    assert len(chain.proposals()) == 1 and not turn.loop.reroute_used
