"""The brain in the in-process pipeline against the fake Anthropic server (real SDK, real HTTP
on 127.0.0.1): prompt caching, faults, the constitution end to end, and no secret leaving.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from infra.fake_llm import FakeAnthropicServer, Scenario
from shared_lib.flags import FLAGS_DOC, FlagsProvider, flags_store_doc, load_flags_file
from shared_lib.layers.ingress import accept
from shared_lib.observability.logs import record_entry
from shared_lib.persona.catalogue import load_persona
from shared_lib.runtime import Runtime
from shared_lib.tools.directory import seed_directory
from shared_lib.turn.inbound import InboundMessage
from shared_lib.wiring.composition import build_runtime, wire_inprocess
from tests.conftest import configure_from_env

ORG = "acme"
MODEL, FAST = "claude-sonnet-4-6", "claude-haiku-4-5"
PERSONA = load_persona()
TASK = "田中さんに見積書を作成するタスクを明日までにお願い"
SECRETS = [
    "taro.secret@example.com",
    "sk-ant-api03-Zz9Yy8Xx7Ww6Vv5Uu4Tt3",
    "hunter2-Passw0rd",
    "090-9876-5432",
    "4111 1111 1111 1111",
]


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    fake = FakeAnthropicServer().start()
    yield fake
    fake.stop()


def make_runtime(
    server: FakeAnthropicServer, monkeypatch: pytest.MonkeyPatch, *, timeout: float = 3.0, **flags: Any
) -> Runtime:
    # tiny backoffs: the retry policy's timing is not what these tests look at
    monkeypatch.setenv("CHARTER_LLM_BACKOFF_INITIAL", "0.001")
    monkeypatch.setenv("CHARTER_LLM_BACKOFF_MAX", "0.005")
    rt = build_runtime(
        {
            "CHARTER_ENV": "test",
            "CHARTER_CHANNELS": "recording",
            "ANTHROPIC_BASE_URL": server.url,
            "ANTHROPIC_API_KEY": "test",
            "CHARTER_LLM_TIMEOUT": str(timeout),
            "CHARTER_LLM_MAX_RETRIES": "2",
        }
    )
    # self-critique is sampled by the turn id's hash (a random ULID) and these tests count a turn's
    # calls: off unless a test asks for it (the self-critique tests set 1.0)
    doc = load_flags_file().model_copy(
        update={"brain_mode": "llm", "model": MODEL, "fast_model": FAST, "self_critique_rate": 0.0, **flags}
    )
    rt.store.set(FLAGS_DOC, flags_store_doc(doc))
    rt.flags = FlagsProvider(rt.store, ttl_seconds=0)
    wire_inprocess(rt)
    seed_directory(
        rt.store,
        ORG,
        [
            {"user_id": "u1", "name": "山田", "level": 3, "department_id": "d1"},
            {"user_id": "u2", "name": "田中", "level": 2, "department_id": "d1"},
        ],
        {"d1": None},
    )
    return rt


@pytest.fixture
def rt(server: FakeAnthropicServer, monkeypatch: pytest.MonkeyPatch) -> Runtime:
    return make_runtime(server, monkeypatch)


_counter = iter(range(1_000_000))


def say(rt: Runtime, text: str) -> dict[str, Any]:
    """Send one message through the whole chain; the turn's observability record."""
    n = next(_counter)
    msg = InboundMessage(
        channel="http",
        org_id=ORG,
        room_id="r1",
        user_id="u1",
        text=text,
        message_id=f"m{n}",
        event_id=f"e{n}",
        received_at=datetime.now(UTC),
    )
    turn_id = accept(rt, msg)
    record = rt.store.get(f"orgs/{ORG}/observability/{turn_id}")
    assert record is not None, "the turn was not recorded"
    return record


def product_calls(server: FakeAnthropicServer) -> list[dict[str, Any]]:
    """The brain's and the responder's requests, without the router's classifier call (the
    text framed as ``<input>``, made first in a turn no command or rule routed)."""
    return [r for r in server.requests if not str(r["body"]["messages"][-1]["content"]).startswith("<input>")]


def reply(rt: Runtime) -> str:
    return rt.channels["http"].sent[-1].text  # type: ignore[attr-defined]


def stored(rt: Runtime, collection: str) -> list[dict[str, Any]]:
    return [doc for _, doc in rt.store.query(f"orgs/{ORG}/{collection}")]


def scenario(server: FakeAnthropicServer, toml: str) -> None:
    server.set_scenario(Scenario.from_toml(toml))


def decision_rule(match: str, proposal: dict[str, Any]) -> str:
    return (
        f"[[rules]]\nmatch = {{ last_user_regex = {json.dumps(match, ensure_ascii=False)}, "
        f'tool_choice = "submit_proposal" }}\n'
        f'respond = {{ content = [{{ type = "tool_use", name = "submit_proposal", '
        f"input = {_toml(proposal)} }}] }}\n"
    )


def _toml(value: Any) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


REASONING = {
    "intent_understanding": "全社員の一覧を確認したいという依頼だと理解した",
    "context_used": ["ユーザーの最新メッセージ"],
    "tool_selection_reason": "社員の一覧を返すツールを提案する",
}


def tool_proposal(
    tool: str, parameters: dict[str, Any], *, intent: str, reason: str, confidence: float = 0.95, **extra: Any
) -> dict[str, Any]:
    """A proposal of one tool call as the model submits it, ``extra`` keys beside its fields."""
    return {
        "output_type": "tool_call",
        "reasoning": {**REASONING, "intent_understanding": intent, "tool_selection_reason": reason},
        "confidence": {"overall": confidence},
        **extra,
        "tool_calls": [{"tool_name": tool, "parameters": parameters}],
    }


# -- a whole turn -------------------------------------------------------------------------------------------
def test_given_a_task_request_when_served_by_the_llm_then_it_is_proposed_executed_phrased_and_recorded(
    rt, server
):
    # WHEN
    record = say(rt, TASK)
    # THEN the proposal carried reasoning and confidence, the task exists, the reply was phrased by a 2nd call
    assert record["arm"] == "llm" and record["output_type"] == "tool_call"
    assert "タスク" in record["llm_reasoning"] and record["llm_confidence"] == 0.9
    assert [t["body"] for t in stored(rt, "tasks")] == ["見積書を作成"]
    calls = [r["body"] for r in product_calls(server)]
    assert [c.get("tool_choice") for c in calls] == [
        {"type": "tool", "name": "submit_proposal"},
        {"type": "none"},
    ]
    assert reply(rt).startswith("タスクを作成したウル")
    # AND usage and cost of both calls are on the turn, and each call has its own record (the call log)
    assert record["usage"]["llm_calls"] == 3 and record["cost_usd"] > 0  # with the router's classifier
    llm_calls = [c for c in stored(rt, "llm_calls") if c["turn_id"] == record["record_id"]]
    assert sorted(c["call_type"] for c in llm_calls) == ["integration", "proposal", "routing"]
    assert sum(c["cost_usd"] for c in llm_calls) == pytest.approx(record["cost_usd"])
    assert not [e for e in stored(rt, "events") if e.get("kind") == "llm_call"]


def test_given_two_turns_when_served_then_system_prompt_and_tools_are_a_cached_prefix_read_on_the_second(
    rt, server
):
    # WHEN two small-talk turns
    first = say(rt, "今日は暑いですね")
    second = say(rt, "今日は本当に暑いですね")
    # THEN both requests mark the end of Base as the cache prefix (it caches the tools before it: the
    # tools carry no breakpoint of their own, so a later step stays within the API's 4, brain/prompt.py)
    for request in product_calls(server):
        body = request["body"]
        assert all("cache_control" not in tool for tool in body["tools"])
        assert (
            body["system"][0]["cache_control"] == {"type": "ephemeral"}
            and "cache_control" not in body["system"][1]
        )
    one, two = product_calls(server)
    assert one["body"]["system"][0] == two["body"]["system"][0]
    # AND the first turn wrote the cache, the second read it
    assert (
        first["usage"]["cache_creation_input_tokens"] > 0 and first["usage"]["cache_read_input_tokens"] == 0
    )
    assert second["usage"]["cache_read_input_tokens"] == first["usage"]["cache_creation_input_tokens"]
    assert second["cost_usd"] < first["cost_usd"]
    # AND the simple turns were served by the fast model
    assert {r["body"]["model"] for r in server.requests} == {FAST} and first["llm_model"] == FAST


def test_given_a_greeting_when_served_then_the_fast_path_answers_without_any_request(rt, server):
    record = say(rt, "おはようございます！")
    assert record["arm"] == "fast_path" and server.requests == []
    assert reply(rt) == PERSONA.message("fast_good_morning")


# -- faults of the fake server through the whole chain -------------------------------------------------------
@pytest.mark.parametrize(
    "fault",
    [
        'kind = "status", status = 429, retry_after = 0.01, times = 1',
        'kind = "status", status = 500, times = 2',
        'kind = "status", status = 529, times = 2',
        'kind = "cut_stream", after_blocks = 0, times = 1',
        'kind = "delay", seconds = 5, times = 1',
    ],
)
def test_given_a_transient_fault_on_the_proposal_when_served_then_the_user_gets_the_normal_answer(
    server, monkeypatch, fault
):
    rt = make_runtime(server, monkeypatch, timeout=0.5 if "delay" in fault else 3.0)
    scenario(server, f'[[rules]]\nmatch = {{ tool_choice = "submit_proposal" }}\nfault = {{ {fault} }}')
    record = say(rt, TASK)
    assert record["output_type"] == "tool_call" and reply(rt).startswith("タスクを作成したウル")
    assert record["errors"] == []


@pytest.mark.parametrize(
    "fault, code",
    [
        ('kind = "status", status = 429, retry_after = 0.01', "rate_limit"),
        ('kind = "status", status = 529', "llm_unavailable"),
    ],
)
def test_given_a_persistent_fault_when_served_then_the_persona_voices_the_catalogue_message(
    rt, server, fault, code
):
    scenario(server, f"[[rules]]\nfault = {{ {fault} }}")
    record = say(rt, TASK)
    assert reply(rt) == PERSONA.message(code)
    assert [e["code"] for e in record["errors"]] == [code] and stored(rt, "tasks") == []
    assert len(product_calls(server)) == 3  # one call and two retries (CHARTER_LLM_MAX_RETRIES=2)


def test_given_the_phrasing_is_cut_by_max_tokens_when_served_then_it_is_continued(rt, server):
    scenario(
        server,
        """
[[rules]]
match = { tool_choice = "none", model_regex = "sonnet" }
fault = { kind = "max_tokens", times = 1 }
respond = { content = [{ type = "text", text = "田中さんにタスクを作成したウル🐺 期限は明日ウル。他にもあれば言ってほしいウル！" }] }
""",
    )
    record = say(rt, TASK)
    assert reply(rt) == "田中さんにタスクを作成したウル🐺 期限は明日ウル。他にもあれば言ってほしいウル！"
    assert (
        record["usage"]["llm_calls"] == 4  # the classifier, the proposal, the phrasing, its continuation
        and server.requests[-1]["body"]["messages"][-1]["role"] == "assistant"
    )


def test_given_an_invalid_answer_then_a_valid_one_when_served_then_the_retry_with_guidance_succeeds(
    rt, server
):
    bad = {
        "output_type": "tool_call",
        "reasoning": REASONING,
        "confidence": {"overall": 0.95},
        "tool_calls": [{"tool_name": "drop_all_tables", "parameters": {}}],
    }
    good = tool_proposal(
        "chatwork_task_create",
        {"body": "見積書を作成", "assignee_name": "田中"},
        intent="田中さんに見積書作成を依頼したいという意図",
        reason="タスク作成ツールを提案する",
    )
    first = decision_rule("^田中", bad).replace(
        '"submit_proposal" }', '"submit_proposal", call = 2 }'
    )  # call 1: the classifier
    second = decision_rule("受け付けられなかった", good)
    scenario(server, first + second)
    record = say(rt, TASK)
    assert record["output_type"] == "tool_call" and [t["body"] for t in stored(rt, "tasks")] == [
        "見積書を作成"
    ]
    retry = product_calls(server)[1]["body"]["messages"]
    assert retry[-1]["content"][0]["type"] == "tool_result" and retry[-1]["content"][0]["is_error"] is True
    assert "drop_all_tables" in retry[-1]["content"][0]["content"]


def test_given_the_store_unavailable_for_the_directory_when_a_tool_is_proposed_then_a_degraded_answer(
    rt, server
):
    real_query = rt.store.query

    def failing_query(collection: str, **kw: Any):
        if collection.endswith("/users"):
            raise ConnectionError("pool exhausted")
        return real_query(collection, **kw)

    rt.store.query = failing_query  # type: ignore[method-assign]
    record = say(rt, TASK)
    assert reply(rt) == PERSONA.message("degraded_store") and stored(rt, "tasks") == []
    assert any(
        e.get("code") == "db_connection_error" and e.get("kind") == "alert" for e in stored(rt, "events")
    )
    assert record["context_degraded"]


# -- no LLM output, whatever it says, decides -----------------------------------------------------------------
def test_given_an_answer_that_claims_permission_and_a_verdict_then_nothing_runs_and_the_admin_is_alerted(
    rt, server
):
    # GIVEN the LLM claims the user may see everything, says the guardian allowed it, and skips confirmation
    claim = {
        "output_type": "tool_call",
        "reasoning": {**REASONING, "tool_selection_reason": "山田さんは管理者なので全社員を見る権限がある"},
        "confidence": {"overall": 1.0},
        "tool_calls": [{"tool_name": "view_all_users", "parameters": {}}],
        "needs_confirmation": False,
        "guardian_action": "allow",
        "authorized": True,
        "user_level": 6,
    }
    scenario(server, decision_rule("全社員", claim))
    # WHEN
    record = say(rt, "全社員の一覧を見せて")
    # THEN nothing was executed, the violation is recorded with its article, and an admin alert was raised
    assert record["execution_result"] == [] and record["output_type"] == "text_response"
    # (the brain withdrew the proposal; the guardian reading the block violation blocks the turn, and
    # the user reads what happens next, never an internal error)
    assert reply(rt) == PERSONA.message("constitution.permission_decision")
    assert record["guardian_action"] == "block" and "内部エラー" not in reply(rt)
    alerts = [
        e
        for e in stored(rt, "events")
        if e.get("kind") == "alert" and e.get("code") == "constitution_violation"
    ]
    assert alerts and any("4.4.2" in a["message"] for a in alerts)


def test_given_a_clean_proposal_above_the_users_level_then_the_gate_alone_decides(rt, server):
    clean = {
        "output_type": "tool_call",
        "reasoning": REASONING,
        "confidence": {"overall": 1.0},
        "tool_calls": [{"tool_name": "view_all_users", "parameters": {}}],
    }
    scenario(server, decision_rule("全社員", clean))
    record = say(rt, "全社員の一覧を見せて")
    assert record["auth_result"] == "denied" and record["execution_result"] == []


def test_given_parameters_that_set_stored_values_then_the_handlers_fixed_logic_decides_them(rt, server):
    params = {
        "body": "見積書を作成",
        "assignee_name": "田中",
        "status": "done",
        "created_by": "ceo",
        "assignee_id": "u999",
    }
    forged = tool_proposal(
        "chatwork_task_create",
        params,
        intent="田中さんに見積書作成を依頼したいという意図",
        reason="タスク作成ツールを提案する",
    )
    scenario(server, decision_rule("^田中", forged))
    say(rt, TASK)
    (task,) = stored(rt, "tasks")
    assert (task["status"], task["created_by"]) == ("open", "u1") and task["assignee_id"] != "u999"


def test_given_an_answer_that_asks_not_to_log_then_everything_is_recorded_anyway(rt, server):
    quiet = {
        "output_type": "text_response",
        "reasoning": {
            "intent_understanding": "雑談への返事をする",
            "no_tool_reason": "ツールは不要な雑談である",
        },
        "confidence": {"overall": 0.95},
        "text_response": "了解ウル🐺",
        "log": False,
        "audit": "skip",
        "observability": "off",
    }
    scenario(server, decision_rule("内緒", quiet))
    record = say(rt, "内緒の話だけど聞いて")
    assert record["input_message"] == "内緒の話だけど聞いて" and record["llm_reasoning"]
    assert [e for e in stored(rt, "events") if e.get("kind") == "alert" and "4.4.4" in e.get("message", "")]


def test_given_an_answer_that_skips_confirmation_of_a_dangerous_tool_then_the_guardian_still_confirms(
    rt, server
):
    rush = tool_proposal(
        "announce",
        {"message": "明日は休み", "recipients": "all"},
        intent="全員にお知らせを送りたいという依頼",
        reason="アナウンスのツールを提案する",
        confidence=1.0,
        needs_confirmation=False,
        skip_confirmation=True,
        verdict="ALLOW",
    )
    scenario(server, decision_rule("全員", rush))
    record = say(rt, "全員に明日は休みとアナウンスして")
    assert record["guardian_action"] == "confirm" and stored(rt, "announcements") == []


# -- self-critique ----------------------------------------------------------------------------------------------
def test_given_a_sampled_turn_when_served_then_the_self_critique_is_recorded(server, monkeypatch):
    rt = make_runtime(server, monkeypatch, self_critique_rate=1.0)
    scenario(
        server,
        """
[[rules]]
match = { tool_choice = "submit_critique" }
respond = { content = [{ type = "tool_use", name = "submit_critique", input = { appropriate = true, improvements = "なし", risks = "期限の解釈" } }] }
""",
    )
    record = say(rt, "見積書のタスク完了した")  # the scripted model proposes it at confidence 0.75
    assert record["self_critique_executed"] is True
    assert json.loads(record["self_critique_result"])["appropriate"] is True


# -- nothing secret leaves ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("json_logs", [False, True])
def test_given_secrets_in_messages_then_no_request_and_no_log_line_contains_them(
    server, monkeypatch, caplog, capsys, json_logs
):
    # GIVEN logs captured either by logging (all loggers, DEBUG: the SDK's too) or as JSON lines on stderr
    if json_logs:
        monkeypatch.setenv("CHARTER_LOG_JSON", "1")
        configure_from_env()
    caplog.set_level(logging.DEBUG)
    rt = make_runtime(server, monkeypatch, self_critique_rate=1.0)
    # WHEN messages full of secrets go through the LLM arm (tool call, memory, small talk, a retried fault)
    scenario(
        server,
        '[[rules]]\nmatch = { last_user_regex = "カード" }\nfault = { kind = "status", status = 500, times = 1 }',
    )
    say(rt, f"田中さんに {SECRETS[0]} へ見積書を送るタスクを明日までにお願い")
    say(rt, f"覚えておいて：私の電話は {SECRETS[3]}、APIキーは {SECRETS[1]}")
    say(rt, f"カード {SECRETS[4]} の件、password: {SECRETS[2]} で暑いですね")
    # THEN no request the fake server received contains any of them
    sent = json.dumps([r["body"] for r in server.requests], ensure_ascii=False)
    assert len(server.requests) >= 5
    for secret in SECRETS:
        assert secret not in sent
    # AND no log line does
    entries = [json.dumps(record_entry(r), ensure_ascii=False) for r in caplog.records]
    logged = caplog.text + "\n".join(entries) + capsys.readouterr().err
    assert logged.strip()
    for secret in SECRETS:
        assert secret not in logged


def test_a_team_asked_for_by_its_department_name_is_found_through_the_context(rt, server):
    # GIVEN a directory that names the team 企画部 (its id d1) and a task of one of its members
    rt.store.set(f"orgs/{ORG}/departments/d1", {"name": "企画部"}, merge=True)
    say(rt, TASK)
    assert [t["body"] for t in stored(rt, "tasks")] == ["見積書を作成"]
    # WHEN the level-3 lead asks for the team by the name people use, Monday-night casual
    record = say(rt, "企画部のタスクってどうなってる？😅")
    # THEN the model read the id beside the name in its context and the team view answered
    proposal = next(
        r
        for r in product_calls(server)[::-1]
        if (r["body"].get("tool_choice") or {}).get("name") == "submit_proposal"
        and "企画部のタスク" in json.dumps(r, ensure_ascii=False)
    )
    assert "企画部〔d1〕" in json.dumps(proposal, ensure_ascii=False)
    assert record["output_type"] == "tool_call" and record["execution_success"] is True
    assert record["selected_tools"] == [
        {"tool_name": "view_team_tasks", "parameters": {"target_department_id": "d1"}}
    ]
    # AND the person reads the team's task and the department's name, never its id
    said = reply(rt)
    assert "見積書を作成" in said and "企画部" in said and "d1" not in said, said


# -- what a turn answered without the model recalls: nothing ---------------------------------------------------
class CountingEmbedder:
    """The runtime's embedder, counting the texts it embeds (the recall's cost: a model call in
    the cloud, tens of milliseconds of CPU with the local model)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name, self.dimensions = inner, inner.name, inner.dimensions
        self.texts: list[str] = []

    def embed(self, texts: Any, *, kind: Any) -> Any:
        self.texts += list(texts)
        return self.inner.embed(texts, kind=kind)


def test_a_greeting_and_a_yes_to_a_confirmation_recall_nothing_while_a_question_recalls_the_episode(
    rt, server
):
    from shared_lib.memory.episode_index import index_episode
    from shared_lib.memory.episodes import episode_path

    assert rt.embedder is not None
    counting = CountingEmbedder(rt.embedder)
    rt.embedder = counting
    # GIVEN an episode of u1's: what 佐藤さん said about expenses last week
    episode = {
        "id": "e-keihi",
        "type": "event_driven",
        "date": "2026-11-20",
        "time": "16:10:00",
        "story_text": "山田さんが「経費精算は12月からクラウドのシステムに移行する」と教えてくれたウル。",
        "metadata": {"tags": ["経費精算"]},
        "user_ids": ["u1"],
    }
    rt.store.set(episode_path(ORG, "e-keihi"), episode)
    assert index_episode(rt.store, rt.embedder, ORG, "e-keihi", episode, now=datetime.now(UTC))
    # WHEN u1 asks about it, typo and dialect included, THEN the context recalls it (its text embedded)
    asked = say(rt, "経費精算のクラウド移行って、結局いつからやったっけ？")
    assert (
        "経費のクラウド" in asked["context_summary"] or "クラウドのシステムに移行" in asked["context_summary"]
    )
    assert any("経費精算" in t for t in counting.texts)
    # WHEN u1 greets THEN the fast path answers and nothing is recalled: no embedding, no search
    before = len(counting.texts)
    greeted = say(rt, "おはようございます〜☀️")
    assert greeted["arm"] == "fast_path" and len(counting.texts) == before
    assert "episodes:skipped" in json.dumps(greeted, ensure_ascii=False, default=str)
    # WHEN a task proposed with medium confidence waits on u1's confirmation
    unsure = {
        "output_type": "tool_call",
        "reasoning": {
            "intent_understanding": "田中さんに見積書の作成を頼みたいという依頼",
            "context_used": ["ユーザーの最新メッセージ"],
            "tool_selection_reason": "タスクを作るツールを提案する",
        },
        "confidence": {"overall": 0.6},
        "needs_confirmation": True,
        "tool_calls": [
            {
                "tool_name": "chatwork_task_create",
                "parameters": {"body": "見積書を作成", "assignee_name": "田中", "limit_date": "金曜"},
            }
        ],
    }
    scenario(server, decision_rule("見積書", unsure))
    proposed = say(rt, "田中さんに見積書の作成、金曜までにお願いできる？")
    assert proposed["guardian_action"] == "confirm" and stored(rt, "tasks") == []
    before, calls = len(counting.texts), len(server.requests)
    # AND u1 answers 「はい！お願いします🙏」
    answered = say(rt, "はい！お願いします🙏")
    # THEN the state runs it once with no proposal asked of the model (the result is phrased), and
    # nothing was recalled for it: no embedding, and no request carries a recalled episode
    assert [t["body"] for t in stored(rt, "tasks")] == ["見積書を作成"]
    made = [r["body"] for r in server.requests[calls:]]
    assert made and all(b.get("tool_choice") != {"type": "tool", "name": "submit_proposal"} for b in made)
    assert not any("思い出した出来事" in json.dumps(b, ensure_ascii=False) for b in made)
    assert len(counting.texts) == before, counting.texts[before:]
    assert "episodes:skipped" in json.dumps(answered, ensure_ascii=False, default=str)


def test_a_goal_said_in_one_message_is_offered_to_the_model_as_its_title_and_kept_in_the_users_words(
    rt, server
):
    """The converter once dropped every key named ``title``, the goal tool's 「目標の内容」 with it:
    the model was never offered the parameter, so a goal said outright was asked for again."""
    goal = "基本情報技術者試験に、今年度中に合格する"
    proposal = tool_proposal(
        "goal_registration",
        {"title": goal},
        intent="今期の目標として資格試験の合格を登録したいという意図",
        reason="目標登録ツールで、述べられた目標の内容を渡す",
    )
    scenario(server, decision_rule("目標", proposal))
    # WHEN a person states their goal the way people do in chat
    record = say(rt, "今期の目標なんですけど、基本情報技術者試験に今年度中に合格する、にします💪")
    # THEN the proposal request offered the goal tool's title
    offered = {t["name"]: t for t in product_calls(server)[0]["body"]["tools"]}
    title = offered["goal_registration"]["input_schema"]["properties"]["title"]
    assert title["type"] == "string" and "目標の内容" in title["description"]
    # AND the goal is kept in the person's words, and the next question is the reason, not the goal again
    goals = stored(rt, "goals")
    assert record["execution_result"] and [g["title"] for g in goals] == [goal]
    assert goals[0]["status"] == "draft" and "理由" in reply(rt)
    assert not any(internal in reply(rt) for internal in ("goal_registration", "why", "next_step", "title"))
