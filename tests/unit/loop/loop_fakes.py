"""The in-process chain of the loop tests: a fake LLM port answers each proposal call with the
next scripted step (a proposal, or a function of the request); the user u1 has two open tasks,
「資料を作る」 and 「見積書を送る」. Shared by ``tests/unit/loop`` and the record tests of
``tests/unit/ops``."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "brain"))
from brain_fakes import ORG, FakeLLM, decision, inbound, runtime, text, text_answer, tool_call

from shared_lib.features.jobs import state as agent_jobs
from shared_lib.flags.document import BestOfN
from shared_lib.layers.ingress import accept
from shared_lib.ports import LLMRequest, LLMResponse, LLMUsage
from shared_lib.runtime import Runtime
from shared_lib.tools.directory import get_person
from shared_lib.tools.task_backend import TaskDraft
from shared_lib.turn.envelope import Turn
from shared_lib.wiring.composition import wire_inprocess

LOOK = {"needs_next_loop": True, "why": "検索結果を見て対象を決めるため", "risk": "low"}
SEARCH = tool_call("chatwork_task_search", {"assignee_name": "自分"}, loop=LOOK)


def tool_results(request: LLMRequest) -> list[dict[str, Any]]:
    """The charter's outcomes the request hands back to the model (one per earlier step)."""
    out = []
    for m in request.messages:
        for b in m["content"] if isinstance(m["content"], list) else []:
            if b.get("type") == "tool_result":
                out.append(json.loads(b["content"]))
    return out


class Chain:
    def __init__(
        self,
        steps: list[Any],
        *,
        clock: Any = None,
        usages: list[LLMUsage] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        """``steps``: the proposal of each proposal call in order (a dict, or a function of the
        request); ``usages``: what each proposal call reports spending (else the fake's default);
        ``env``: settings of the runtime (the Firestore emulator's store, say)."""
        self.steps = list(steps)
        self.usages = list(usages or [])
        self.llm = FakeLLM(default=self._answer)
        # the loop's tests count its proposal and phrasing calls: Best-of-N (on in the dev flags
        # the runtime reads) would add wordings of a text answer; its own tests turn it on
        self.rt: Runtime = runtime(self.llm, env=env, best_of_n=BestOfN())
        if clock is not None:
            self.rt.clock = clock
        wire_inprocess(self.rt)
        self.n = 0
        for i, body in enumerate(("資料を作る", "見積書を送る")):
            self.add_task(body, f"m{i}")

    def add_task(self, body: str, marker: str) -> None:
        """An open task of u1."""
        me = get_person(self.rt.store, ORG, "u1")
        assert me is not None
        draft = TaskDraft(
            body=body,
            assignee_id=me.task_account_id,
            assignee_name=me.name,
            room_id="r1",
            created_by="u1",
            marker=marker,
        )
        self.rt.store.run_transaction(lambda txn: self.rt.task_backend.create(ORG, draft, txn=txn))

    def _answer(self, request: LLMRequest) -> LLMResponse:
        if request.call_type != "proposal":
            return text_answer("確認して片づけたウル🐺")
        step = self.steps.pop(0) if self.steps else text("終わったウル🐺")
        spent = self.usages.pop(0) if self.usages else None
        return decision(step(request) if callable(step) else step, u=spent)

    def say(self, message: str, user: str = "u1") -> tuple[str, Turn]:
        self.n += 1
        turn_id = accept(self.rt, inbound(message, f"e{self.n}", user=user))
        assert turn_id is not None
        return self.rt.channels["http"].sent[-1].text, self.completed(turn_id)  # type: ignore[attr-defined]

    def completed(self, turn_id: str) -> Turn:
        done = [
            Turn.from_message(data, attrs, self.rt.store)
            for topic, data, attrs, _ in self.rt.bus.published  # type: ignore[attr-defined]
            if topic == "completed" and attrs["turn_id"] == turn_id
        ]
        assert len(done) == 1
        return done[0]

    def replies(self) -> list[str]:
        return [r.text for r in self.rt.channels["http"].sent]  # type: ignore[attr-defined]

    def tasks(self, status: str = "open") -> list[str]:
        return [
            d["body"].split("\n")[0]
            for _, d in self.rt.store.query(f"orgs/{ORG}/tasks")
            if d.get("status") == status
        ]

    def proposals(self) -> list[LLMRequest]:
        return self.llm.calls("proposal")


class Clock:
    """A clock a test moves (``clock.now += ...``)."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def store_job(rt: Runtime, job_id: str, task: str, **changes: Any) -> dict[str, Any]:
    """A delegated job of u1 in room r1 (queued unless ``changes`` say otherwise), stored."""
    parent = {"turn_id": "t-parent", "room_id": "r1", "channel": "http", "conversation_key": f"{ORG}/r1/u1"}
    doc = agent_jobs.new_job(
        job_id=job_id,
        org_id=ORG,
        requester="u1",
        task=task,
        parent=parent,
        limits=agent_jobs.load_limits(),
        max_steps=3,
        now=rt.clock(),
    )
    doc.update(changes)
    rt.store.set(agent_jobs.job_path(ORG, job_id), doc)
    return doc


def complete_found(request: LLMRequest) -> dict[str, Any]:
    """Step 2: complete the task the search found (the model read the tool_result)."""
    found = tool_results(request)[-1]["results"][0]["result"]["tasks"]
    task = next(t for t in found if "資料" in t["body"])
    return tool_call("chatwork_task_complete", {"task_query": task["body"], "task_id": task["task_id"]})
