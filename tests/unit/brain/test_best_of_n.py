"""Best-of-N phrasing of the reply (seed 001 §3-4): scripted candidates per temperature, the
evaluator's choice, regeneration, the templates, N by difficulty, the cost cap, the judge."""

from __future__ import annotations

import dataclasses
import threading

import pytest
from brain_fakes import FAST, MODEL, ORG, FakeLLM, runtime, text_answer, turn

from shared_lib.brain.integration import done_text, integrate
from shared_lib.features.best_of_n import steps as best_of_n
from shared_lib.features.best_of_n import steps_cost
from shared_lib.features.best_of_n.state import load_best_of_n_config
from shared_lib.features.best_of_n.state_difficulty import estimate
from shared_lib.flags.document import BestOfN
from shared_lib.ports import LLMRequest
from shared_lib.runtime import Hooks
from shared_lib.telemetry.llm_calls import LLMCallLog
from shared_lib.turn.callctx import call_context
from shared_lib.turn.envelope import ToolResult

CFG = load_best_of_n_config()
DONE = ToolResult(
    tool_name="chatwork_task_create",
    call_index=0,
    ok=True,
    result={"task_id": "t-1", "body": "見積書を作成", "assignee": "田中", "limit_date": "2026-02-01"},
)
LISTED = ToolResult(
    tool_name="chatwork_task_search",
    call_index=0,
    ok=True,
    result={"tasks": [{"body": "見積書"}, {"body": "請求書"}, {"body": "議事録"}]},
)
GOOD = "田中さんに見積書のタスクを作ったウル🐺 期限は2月1日ウル。他にもあれば言ってほしいウル！"
PLAIN = "田中さんに見積書のタスクを作成しました。期限は2月1日です。"  # no persona
ISO = "田中さんのタスクを作ったウル🐺 期限は2026-02-01ウル。"  # an ISO date
RUDE = "タスクは作ったウル🐺 あとは自分で考えてほしいウル。"  # a forbidden phrase of the core
LEAK = "chatwork_task_create を実行したウル🐺 期限は2月1日ウル。"  # an internal name
BY_TEMPERATURE = {0.1: PLAIN, 0.3: GOOD, 0.5: ISO, 0.7: RUDE, 0.9: LEAK, 1.0: PLAIN, 1.2: PLAIN}
ON = BestOfN(orgs=[ORG], max_cost_usd_per_turn=1.0)


def judge_json(n: int, best: int = 0, quality: int = 6) -> str:
    rows = [
        f'{{"index": {i}, "quality": {9 if i == best else quality}, "persona": 7, "rules": 9}}'
        for i in range(1, n + 1)
    ]
    return '{"scores": [' + ", ".join(rows) + "]}"


def scripted(by_temperature: dict[float, str], judge: str = "") -> FakeLLM:
    """Candidates answer by their temperature, the judge with ``judge``, the plain call with GOOD."""

    def answer(request: LLMRequest):
        if request.call_type == "evaluation":
            return text_answer(judge)
        return text_answer(by_temperature.get(request.temperature, GOOD) if request.temperature else GOOD)

    return FakeLLM(default=answer)


def turn_of(difficulty: int):
    """A turn whose difficulty is ``difficulty``: a list result, a routed turn, more results, a long input."""
    text = "田中さんに見積書のタスクをお願い" + ("、詳しく説明すると" * 15 if difficulty >= 5 else "")
    results = [DONE]
    if difficulty >= 2:
        results = [LISTED]
    if difficulty >= 4:
        results = [LISTED, DONE, DONE]
    t = turn(text)
    t.proposal.arm = "llm"  # type: ignore[assignment]
    t.proposal.model = MODEL
    t.execution.results = results
    if difficulty >= 3:
        t.route.route = "ANALYZE"
    assert estimate(t.brain_text(), results, route=t.route.route, steps=0, cfg=CFG) == difficulty
    return t


def phrased(llm: FakeLLM, t, flags: BestOfN | None = ON, *, log: bool = True):
    rt = runtime(llm, **({"best_of_n": flags} if flags is not None else {}))
    if log:
        rt.llm = LLMCallLog(llm, rt.store, prices=rt.prices)
    with call_context(t, "responder"):
        reply = integrate(t, rt)
    return rt, reply


def evaluation(rt, t) -> dict:
    doc = rt.store.get(f"orgs/{ORG}/evaluations/{t.turn_id}-{t.step}")
    assert doc is not None
    return doc


def test_given_six_scripted_candidates_when_evaluated_then_the_one_that_keeps_persona_and_rules_is_sent():
    # GIVEN difficulty 4 (N=6, the judge): candidates that drop the persona, show an ISO date,
    # use a forbidden phrase or an internal name, and one good one the judge rates best
    llm = scripted(BY_TEMPERATURE, judge_json(6, best=2))
    t = turn_of(4)
    # WHEN the reply is phrased
    rt, reply = phrased(llm, t)
    # THEN six candidates at the config's temperatures, one judge call on the fast model, the good one sent
    temps = sorted(r.temperature for r in llm.calls("integration"))
    assert temps == sorted(CFG.temperatures[:6]) and reply == GOOD
    (judge,) = llm.calls("evaluation")
    assert judge.model == FAST and judge.purpose == "evaluation" and GOOD in judge.messages[0]["content"]
    doc = evaluation(rt, t)
    assert (doc["difficulty"], doc["n"], doc["chosen"], doc["judge"]) == (4, 6, 2, "full")
    by_index = {row["index"]: row for row in doc["scores"]}
    assert by_index[3]["violations"] == ["iso_date"] and by_index[3]["rules"] < CFG.rule_threshold
    assert by_index[4]["violations"] == ["forbidden_phrase"] and by_index[6]["violations"] == [
        "internal_name"
    ]
    assert by_index[1]["persona"] < by_index[2]["persona"] and doc["spread"] > 0
    summary = dict(t.response.best_of_n or {})
    assert 0.3 < summary.pop("mean_edit_distance") < 1.0
    # the two PLAIN candidates (0.1 and 1.0) are the one pair of the fifteen that does not differ
    assert summary == {
        "difficulty": 4,
        "n": 6,
        "chosen": 2,
        "regenerated": False,
        "kind": "results",
        "judge": "full",
        "distinct_pair_ratio": round(14 / 15, 4),
    }


def test_the_scores_go_to_each_candidates_call_log_entry_under_the_turn():
    # GIVEN the call log around the scripted model
    llm = scripted(BY_TEMPERATURE, judge_json(6, best=2))
    t = turn_of(4)
    # WHEN Best-of-N runs on its thread pool
    rt, _ = phrased(llm, t)
    # THEN every candidate's entry carries the turn (the call context reached the threads) and its scores
    entries = [doc for _, doc in rt.store.query(f"orgs/{ORG}/llm_calls")]
    candidates = [e for e in entries if e["call_type"] == "integration"]
    assert len(candidates) == 6 and all(e["turn_id"] == t.turn_id for e in entries)
    assert all(
        {"index", "temperature", "total", "rules", "chosen"} <= set(e["evaluation"]) for e in candidates
    )
    (chosen,) = [e for e in candidates if e["evaluation"]["chosen"]]
    assert chosen["evaluation"]["temperature"] == 0.3 and chosen["response_text"] == GOOD
    (judge,) = [e for e in entries if e["call_type"] == "evaluation"]
    assert judge["purpose"] == "evaluation" and "evaluation" not in judge
    # AND the turn's cost is counted per purpose
    assert set(t.usage.cost_by_purpose) == {"phrasing", "evaluation"}
    assert sum(t.usage.cost_by_purpose.values()) == pytest.approx(t.usage.cost_usd)
    assert evaluation(rt, t)["cost_usd"] == pytest.approx(t.usage.cost_usd)


def test_given_every_candidate_breaks_a_rule_then_the_set_is_regenerated_once():
    # GIVEN difficulty 2 (N=2, no judge): the first set all rude, the second set good
    lock, seen = threading.Lock(), []

    def answer(request: LLMRequest):
        with lock:
            seen.append(request.temperature)
            return text_answer(RUDE if len(seen) <= 2 else GOOD)

    llm = FakeLLM(default=answer)
    t = turn_of(2)
    # WHEN phrased
    rt, reply = phrased(llm, t)
    # THEN four candidate calls (two sets), no judge, the regenerated good text sent
    assert len(llm.calls("integration")) == 4 and llm.calls("evaluation") == [] and reply == GOOD
    doc = evaluation(rt, t)
    assert doc["regenerated"] is True and doc["judge"] == "none" and doc["chosen"] is not None


def test_given_the_regeneration_breaks_the_rules_too_then_the_persona_templates_answer():
    # GIVEN every candidate of every set uses a forbidden phrase
    llm = scripted({t: RUDE for t in CFG.temperatures})
    t = turn_of(2)
    # WHEN phrased
    rt, reply = phrased(llm, t)
    # THEN two sets were asked (once regenerated, never more) and the fixed template answers
    today = rt.clock().astimezone(rt.policy.zone).date()
    assert len(llm.calls("integration")) == 4
    assert reply == done_text(rt.persona, LISTED, rt.registry, today=today) and "自分で考えて" not in reply
    doc = evaluation(rt, t)
    assert doc["fallback"] is True and doc["chosen"] is None and doc["regenerated"] is True


@pytest.mark.parametrize(("difficulty", "n"), [(1, 1), (2, 2), (3, 4), (4, 6), (5, 8)])
def test_n_follows_the_difficulty(difficulty, n):
    # GIVEN a turn of that difficulty and a generous cap
    llm = scripted(BY_TEMPERATURE, judge_json(n, best=2))
    t = turn_of(difficulty)
    # WHEN phrased
    rt, _ = phrased(llm, t)
    # THEN N candidates; the judge only at 4-5, the refinement (one more phrasing call) only at 5
    calls = llm.calls("integration")
    refine = 1 if difficulty == 5 else 0
    assert len(calls) == n + refine
    assert len(llm.calls("evaluation")) == (1 if difficulty >= 4 else 0)
    if n == 1:  # the plain single call: no temperature, no evaluation document
        assert calls[0].temperature is None and rt.store.get(f"orgs/{ORG}/evaluations/{t.turn_id}-0") is None
    else:
        assert evaluation(rt, t)["n"] == n


def test_the_refinement_at_difficulty_5_is_kept_only_when_it_keeps_the_rules():
    # GIVEN difficulty 5: the refinement call (no temperature) answers with an ISO date
    def answer(request: LLMRequest):
        if request.call_type == "evaluation":
            return text_answer(judge_json(8, best=2))
        return text_answer(
            ISO if request.temperature is None else BY_TEMPERATURE.get(request.temperature, GOOD)
        )

    llm = FakeLLM(default=answer)
    t = turn_of(5)
    rt, reply = phrased(llm, t)
    # THEN the refinement was asked and dropped: the best candidate is sent
    assert reply == GOOD and evaluation(rt, t)["refined"] is False


def test_the_cost_cap_lowers_n_and_a_tiny_cap_is_the_plain_call():
    level = CFG.level(4)
    request = LLMRequest(
        call_type="integration",
        model=MODEL,
        max_tokens=600,
        messages=[{"role": "user", "content": "x" * 800}],
    )
    rt = runtime(None)
    three = steps_cost.estimated_cost(3, level, request, FAST, rt.prices, CFG)
    # WHEN the cap fits three candidates and the judge, not four
    n, cost = steps_cost.plan(level, request, FAST, rt.prices, CFG, cap=three + 1e-9)
    assert (n, cost) == (3, three) and steps_cost.estimated_cost(
        4, level, request, FAST, rt.prices, CFG
    ) > three
    # AND a cap below two candidates is one
    assert steps_cost.plan(level, request, FAST, rt.prices, CFG, cap=1e-6)[0] == 1
    # AND in a turn: a tiny cap makes the one plain call
    llm = scripted(BY_TEMPERATURE, judge_json(6, best=2))
    t = turn_of(4)
    phrased(llm, t, BestOfN(orgs=["*"], max_cost_usd_per_turn=1e-6))
    (call,) = llm.requests
    assert call.temperature is None and t.response.best_of_n == {"difficulty": 4, "n": 1, "planned_n": 6}


def test_flag_off_is_exactly_the_old_single_call():
    # GIVEN the same turn with Best-of-N off (the flags model's default; the dev file turns it
    # on), on for another organisation, and capped to N=1
    requests = []
    for flags in (
        BestOfN(),
        BestOfN(orgs=["other"], max_cost_usd_per_turn=1.0),
        BestOfN(orgs=[ORG], max_cost_usd_per_turn=1e-6),
    ):
        llm = scripted(BY_TEMPERATURE)
        t = turn_of(4)
        _, reply = phrased(llm, t, flags, log=False)
        (request,) = llm.requests
        requests.append(request.model_dump())
        assert reply == GOOD
    # THEN one call, the same bytes every time, and no Best-of-N trace on the turn when off
    assert requests[0] == requests[1] == requests[2] and requests[0]["temperature"] is None


def test_the_brain_reaches_best_of_n_only_through_the_room_the_runtime_registered():
    # GIVEN the flags turning Best-of-N on for the organisation, on a runtime built by the
    # composition root (the room registered) and on one whose hooks lend no phrasing
    with_room, without_room = scripted(BY_TEMPERATURE, judge_json(6, best=2)), scripted(BY_TEMPERATURE)
    registered = runtime(with_room, best_of_n=ON)
    assert registered.hooks.phrasing is best_of_n
    unregistered = dataclasses.replace(runtime(without_room, best_of_n=ON), hooks=Hooks(phrasing=None))
    replies = []
    for rt, llm in ((registered, with_room), (unregistered, without_room)):
        t = turn_of(4)
        with call_context(t, "responder"):
            replies.append((integrate(t, rt), len(llm.calls("integration")), t.response.best_of_n))
    # THEN the registered room phrases among six candidates; without it, one plain call, no trace
    assert replies[0][0] == GOOD and replies[0][1] == 6 and replies[0][2]["n"] == 6
    assert replies[1] == (GOOD, 1, None)


def test_a_judge_answer_that_does_not_parse_gives_its_weight_to_the_other_axes():
    # GIVEN the judge answers prose
    llm = scripted(BY_TEMPERATURE, "どれも良い回答だと思います。")
    t = turn_of(4)
    # WHEN phrased
    rt, reply = phrased(llm, t)
    # THEN no crash: the code's axes choose the good candidate, the judge's axis is empty
    doc = evaluation(rt, t)
    assert reply == GOOD and doc["judge"] == "unparsed" and doc["judge_spread"] is None
    assert all(row["judge"] is None for row in doc["scores"])


def test_a_failed_candidate_is_skipped_and_all_failing_is_the_templates():
    from shared_lib.errors import LLMError

    def answer(request: LLMRequest):
        if request.temperature == 0.3:
            raise LLMError("rate_limit", "429")
        return text_answer(GOOD if request.temperature == 0.1 else PLAIN)

    t = turn_of(2)
    rt, reply = phrased(FakeLLM(default=answer), t)
    assert reply == GOOD and evaluation(rt, t)["answered"] == 1
    # AND when every candidate fails, the template answers and the error is on the turn
    t = turn_of(2)
    rt, reply = phrased(FakeLLM(default=LLMError("llm_unavailable", "down")), t)
    today = rt.clock().astimezone(rt.policy.zone).date()
    assert reply == done_text(rt.persona, LISTED, rt.registry, today=today)
    assert [e.code for e in t.errors] == ["llm_unavailable"]


def test_candidates_after_the_first_ask_for_another_wording_since_claude_takes_no_temperature():
    from shared_lib.features.best_of_n.steps_run import _variant
    from shared_lib.ports import LLMRequest

    base = LLMRequest(
        call_type="integration",
        model="m",
        system=[{"type": "text", "text": "persona"}],
        messages=[{"role": "user", "content": "q"}],
    )
    first, second, third = (_variant(base, i, t) for i, t in ((1, 0.1), (2, 0.3), (3, 0.5)))
    assert first.system == base.system and first.temperature == 0.1
    assert second.system[:-1] == base.system and "別案2" in second.system[-1]["text"]
    assert third.system[-1] != second.system[-1] and base.system == [{"type": "text", "text": "persona"}]
