"""A busy machine's store is slow, not down: a request whose conversation state (the session,
which a tool call needs) comes back after the context sources' deadline, but well within the
turn's processing budget, is carried out as on a quiet machine, never answered with the
degraded 「混み合っていて」 text or a confirmation question (the soak on a loaded machine saw
memory saves answered so). A store slower than the whole budget still degrades."""

from __future__ import annotations

import threading

import pytest
from ops_fakes import make_runtime, replies, send

from infra.fake_llm.port import InProcessScriptedLLM
from shared_lib.adapters.memory_store import MemoryStore

DEADLINE = 0.05  # the context sources' deadline of these runtimes (seconds)
ASKS = [
    ("覚えて: S0042の打ち合わせはオンラインが好み", "しっかり覚えた"),
    ("これ覚えておいて：来週の定例は木曜10時〜に変更😊", "しっかり覚えた"),
    ("田中さんに明日までに見積書を作成するタスクをお願い", "タスクを作成した"),
]


class BusyStore(MemoryStore):
    """A memory store whose session documents answer ``delay`` seconds late (a starved emulator)."""

    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay = delay

    def get(self, path: str):  # type: ignore[no-untyped-def]
        if "/sessions/" in path:
            threading.Event().wait(self.delay)
        return super().get(path)

    def get_many(self, paths):  # type: ignore[no-untyped-def]
        if any("/sessions/" in p for p in paths):  # a batch holding the session waits for it
            threading.Event().wait(self.delay)
        return super().get_many(paths)


def busy_runtime(delay: float, budget: float = 45.0):  # type: ignore[no-untyped-def]
    return make_runtime(
        llm=InProcessScriptedLLM(),
        store=BusyStore(delay),
        env={"CHARTER_CONTEXT_SOURCE_TIMEOUT": str(DEADLINE), "CHARTER_TURN_BUDGET_SECONDS": str(budget)},
    )


def context_detail(rt, turn_id: str) -> str:  # type: ignore[no-untyped-def]
    record = MemoryStore.get(rt.store, f"orgs/demo/observability/{turn_id}") or {}
    return next(row["detail"] for row in record["trail"] if row["layer"] == "context")


@pytest.mark.parametrize(("text", "done"), ASKS, ids=["memory", "memory-casual", "task"])
def test_a_session_later_than_the_sources_deadline_but_within_the_budget_is_waited_for(text, done):
    # GIVEN a store that answers the session three deadlines late, with the turn's budget to spare
    rt = busy_runtime(delay=3 * DEADLINE)
    # WHEN a person asks for something that runs a tool
    turn_id = send(rt, text, user="u-suzuki")
    # THEN it is done and said so, and the context read the session (nothing degraded)
    assert done in replies(rt)[-1], replies(rt)
    assert "混み合って" not in replies(rt)[-1] and "進めてよい" not in replies(rt)[-1]
    assert "session:timeout" not in context_detail(rt, turn_id)


def test_a_session_later_than_the_whole_budget_still_degrades_the_request():
    # GIVEN a store whose session answers after the turn's whole processing budget
    rt = busy_runtime(delay=6 * DEADLINE, budget=2 * DEADLINE)
    # WHEN a person asks to keep something
    turn_id = send(rt, ASKS[0][0], user="u-suzuki")
    # THEN nothing is kept on a guess: the reply says the system is busy (the degraded answer)
    assert "混み合って" in replies(rt)[-1], replies(rt)
    assert "session:timeout" in context_detail(rt, turn_id)
