"""The scripted model (what the fake Anthropic server answers) takes multi-step turns through the
in-process chain: search then act; search, find nothing, ask. Each step's brain calls carry
their own usage, and a later step reads the stable prefix from the prompt cache."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "brain"))
from brain_fakes import ORG, inbound, runtime

from infra.fake_llm.port import InProcessScriptedLLM
from shared_lib.layers.ingress import accept
from shared_lib.runtime import Runtime
from shared_lib.turn.envelope import Turn
from shared_lib.wiring.composition import wire_inprocess

REQUEST = "自分のタスクを確認して、資料のタスクは完了にして"


def chain(*tasks: str) -> tuple[Runtime, InProcessScriptedLLM]:
    llm = InProcessScriptedLLM()
    rt = runtime(llm, self_critique_rate=0.0)
    wire_inprocess(rt)
    for i, body in enumerate(tasks):  # the user's own open tasks, made by the chain itself
        accept(rt, inbound(f"山田さんに{body}のタスクをお願い", f"seed{i}"))
    return rt, llm


def say(rt: Runtime, text: str, event: str = "e1") -> tuple[str, Turn]:
    turn_id = accept(rt, inbound(text, event))
    assert turn_id is not None
    done = [
        Turn.from_message(d, a, rt.store)
        for t, d, a, _ in rt.bus.published  # type: ignore[attr-defined]
        if t == "completed" and a["turn_id"] == turn_id
    ]
    return rt.channels["http"].sent[-1].text, done[0]  # type: ignore[attr-defined]


def open_tasks(rt: Runtime) -> list[str]:
    return sorted(
        d["body"].split("\n")[0] for _, d in rt.store.query(f"orgs/{ORG}/tasks") if d.get("status") == "open"
    )


def test_search_then_act():
    rt, _ = chain("資料作成", "見積書送付")
    assert open_tasks(rt) == ["見積書送付", "資料作成"]
    reply, turn = say(rt, REQUEST)
    assert open_tasks(rt) == ["見積書送付"]
    assert [s.results[0].tool_name for s in turn.loop.steps] == ["chatwork_task_search"]
    assert turn.execution.results[0].tool_name == "chatwork_task_complete"
    assert turn.loop.stop_reason == "done" and reply


def test_search_find_nothing_ask():
    rt, _ = chain("見積書送付")
    reply, turn = say(rt, REQUEST)
    assert open_tasks(rt) == ["見積書送付"]  # nothing was completed
    assert turn.response.kind == "clarify" and turn.loop.stop_reason == "need_user_confirmation"
    assert "見つからなかった" in reply and "見積書送付" in reply  # the tasks it found are the options


def test_each_step_has_its_usage_and_the_later_step_reads_the_cached_prefix():
    rt, _ = chain("資料作成")
    _, turn = say(rt, REQUEST)
    first, second = turn.loop.steps[0].usage, turn.proposal.usage
    assert second is not None and first.llm_calls >= 1 and second.llm_calls >= 1
    assert second.cache_read_input_tokens > 0
    assert second.input_tokens + second.cache_read_input_tokens > first.input_tokens
