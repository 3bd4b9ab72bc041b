"""The background memory target's job plumbing: admin POST /tasks/memory/<job> publishes one job
per organisation on memory.jobs, the memory layer runs it once per job id, an unknown job is 404;
a completed turn compacts its conversation in the memory layer, after the reply."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from ops_fakes import make_runtime
from test_ops_admin import client

from shared_lib.context.history import append_message, conversation_path, recent_messages
from shared_lib.context.memory_config import load_memory_config
from shared_lib.layers.memory import budget
from shared_lib.ports import LLMRequest, LLMResponse
from shared_lib.wiring.composition import runner, wire_inprocess

NOW = datetime(2026, 11, 25, 3, 0, tzinfo=UTC)


class SummaryLLM:
    def __init__(self) -> None:
        self.requests: list[LLMRequest] = []

    def complete(self, request: LLMRequest) -> LLMResponse:
        self.requests.append(request)
        return LLMResponse(
            content=[{"type": "text", "text": "見積の話をした"}], stop_reason="end_turn", model=request.model
        )


def fixed_history_budget(tmp_path) -> dict[str, str]:
    """The operators' override: a history budget of 1000 tokens instead of the model's window."""
    path = tmp_path / "memory.json"
    path.write_text('{"compaction": {"history_token_budget": 1000}}', encoding="utf-8")
    return {"CHARTER_MEMORY_CONFIG": str(path)}


def grown(rt, org: str, key: str, n: int = 14, chars: int = 60) -> None:
    """A conversation of ``n`` messages of ``chars`` tokens: 14 x 60 = 84 % of a 1000-token budget."""
    for i in range(n):
        append_message(
            rt.store,
            org,
            key,
            f"t{i:03d}-0-in",
            role="user",
            text="あ" * chars,
            at=NOW - timedelta(minutes=30) + timedelta(seconds=i),
            user_id="u1",
            room_id="r1",
        )


def test_the_compact_task_publishes_one_job_per_active_organisation_and_each_runs_once(tmp_path):
    # GIVEN two organisations with a conversation over the light threshold, wired in process
    llm = SummaryLLM()
    rt = make_runtime(llm=llm, clock=lambda: NOW, env=fixed_history_budget(tmp_path))
    wire_inprocess(rt)
    grown(rt, "acme", "acme/r1/u1")
    grown(rt, "globex", "globex/r1/u1")
    assert budget(rt, load_memory_config(rt.settings.memory_file)) == (1000, 0)
    # WHEN the scheduler posts the compact task
    response = client(rt).post("/tasks/memory/compact")
    # THEN one job per organisation went to memory.jobs and compacted each conversation
    assert response.status_code == 200 and response.get_json()["result"]["orgs"] == ["acme", "globex"]
    jobs = [(a["org_id"], a["kind"]) for t, _, a, _ in rt.bus.published if t == "memory"]
    assert jobs == [("acme", "memory_job"), ("globex", "memory_job")]
    for org in ("acme", "globex"):
        doc = rt.store.get(conversation_path(org, f"{org}/r1/u1"))
        assert doc["summary"] == "見積の話をした" and doc["compaction"]["level"] == "light"
        assert len(recent_messages(rt.store, org, f"{org}/r1/u1", 50)) == 10
    assert len(llm.requests) == 2 and {r.purpose for r in llm.requests} == {"summary"}
    # AND a redelivered job message runs nothing again
    _, data, attrs, _ = next(m for m in rt.bus.published if m[0] == "memory")
    assert runner(rt, "memory").handle(data, attrs) == "duplicate"


def test_an_unknown_memory_job_is_not_found_and_publishes_nothing():
    rt = make_runtime(clock=lambda: NOW)
    assert client(rt).post("/tasks/memory/nope").status_code == 404
    assert [t for t, *_ in rt.bus.published if t == "memory"] == []


def test_a_local_only_conversation_is_never_summarised_by_a_cloud_peer(tmp_path):
    # GIVEN a conversation over the threshold set to /local two hours ago (past its session), and a
    # cloud LLM
    from shared_lib.layers.memory import compact_conversation
    from shared_lib.state.local_only import write_local_only as set_local_only

    llm = SummaryLLM()
    rt = make_runtime(llm=llm, clock=lambda: NOW, env=fixed_history_budget(tmp_path))
    grown(rt, "acme", "acme/r1/u1")
    then = NOW - timedelta(hours=2)
    set_local_only(rt.store, "acme", "acme/r1/u1", True, then, turn_id="t-local", at=then)
    # WHEN the memory target compacts it
    result = compact_conversation(rt, "acme", "acme/r1/u1")
    # THEN the local-only guard refuses the summary call: nothing is sent, nothing written
    assert result.reason == "llm_failed" and llm.requests == []
    assert "summary" not in rt.store.get(conversation_path("acme", "acme/r1/u1"))
