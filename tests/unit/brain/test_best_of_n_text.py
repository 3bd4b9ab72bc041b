"""Best-of-N where it pays (issue 37): a text answer of the proposal takes other wordings at the
seed's difficulty levels (seed 001 §4.4, §5.3), the cost estimate is checked against the fake
model's billed usage, and every run reports its candidates' variety and the judge's picks."""

from __future__ import annotations

import pytest
from brain_fakes import ORG, FakeLLM, decision, runtime, served, text, text_answer
from test_best_of_n import CFG, turn_of

from infra.fake_llm.port import InProcessScriptedLLM
from infra.fake_llm.scripted import reword
from shared_lib.brain.integration import integrate
from shared_lib.brain.models import flags_document
from shared_lib.features.best_of_n import steps_cost
from shared_lib.features.best_of_n.state_variety import edit_distance, variety
from shared_lib.flags.document import BestOfN
from shared_lib.ops.render import best_of_n_lines
from shared_lib.ports import LLMRequest, LLMResponse
from shared_lib.telemetry.llm_calls import LLMCallLog
from shared_lib.turn.callctx import call_context
from shared_lib.wiring.composition import wire_inprocess

# a long message of small talk: difficulty 2 (long input), so N=2 without the judge
WORRY = (
    "最近チームの雰囲気がちょっとギスギスしてる気がしてて…新しく入った人も多いし、歓迎会みたいなのを"
    "やった方がいいのかなって思ってるんだけど、年末で忙しい時期だし、みんな乗り気じゃなかったら"
    "どうしようって迷ってる。幹事をやるのも初めてだから不安で😅 ソウルくんならどうする？？"
)
DRAFT = "幹事は初めてだと不安になるウルね🐺 まずは短いランチ会から始めるのはどうウル？ 忙しい時期でも参加しやすいウル！"
REWORDED = "初めての幹事は緊張するウルね🐺 忙しい時期なら、短いランチ会から始めると参加しやすいウル！ 気軽に誘ってみるといいウル。"
CLAIMED = "歓迎会の案内をみんなに送信しましたウル🐺 きっと盛り上がるウル！"  # claims an action nobody took
PLAIN = "幹事は初めてだと不安になりますよね。まずは短いランチ会から始めるのはどうでしょう。"  # no persona
ON = BestOfN(orgs=["*"], max_cost_usd_per_turn=0.05)


class Chain:
    """The wired in-process chain over a fake model whose other wordings are ``wording``."""

    def __init__(self, wording: str, proposal: str = DRAFT) -> None:
        def answer(request: LLMRequest) -> LLMResponse:
            if request.call_type == "proposal":
                return decision(text(proposal))
            content = str(request.messages[-1]["content"])
            return text_answer(wording if "<draft>" in content else "できたウル🐺")

        self.llm = FakeLLM(default=answer)
        self.rt = runtime(self.llm, best_of_n=ON, self_critique_rate=0.0)
        self.rt.llm = LLMCallLog(self.llm, self.rt.store, prices=self.rt.prices)
        wire_inprocess(self.rt)

    def say(self, message: str) -> tuple[str, dict, dict | None]:
        """(reply, record, the turn's Best-of-N evaluation or None)."""
        reply, record = served(self.rt, message, f"e{len(self.llm.requests)}")
        run = self.rt.store.get(f"orgs/{ORG}/evaluations/{record['record_id']}-0")
        return reply, record, run


def wordings(llm: FakeLLM) -> list[LLMRequest]:
    return [r for r in llm.requests if "<draft>" in str(r.messages[-1]["content"])]


def test_given_a_long_text_question_then_the_proposals_answer_and_another_wording_are_weighed():
    # GIVEN Best-of-N on for every organisation and a long message the model answers in text
    assert len(WORRY) > CFG.difficulty.long_input_chars
    chain = Chain(REWORDED)
    # WHEN it is served
    reply, record, run = chain.say(WORRY)
    # THEN difficulty 2: one more wording was asked (the draft is the first candidate, paid for)
    (asked,) = wordings(chain.llm)
    assert DRAFT in str(asked.messages[-1]["content"]) and asked.temperature == CFG.temperatures[1]
    assert run is not None and (run["kind"], run["difficulty"], run["n"], run["judge"]) == (
        "text_answer",
        2,
        2,
        "none",
    )
    assert [row["index"] for row in run["scores"]] == [1, 2] and run["scores"][0]["temperature"] is None
    # AND what was chosen is what the guardian judged and the user read
    chosen = next(row["index"] for row in run["scores"] if row["chosen"])
    sent = {1: DRAFT, 2: REWORDED}[chosen]
    assert reply == sent and record["final_response"] == sent and record["guardian_action"] == "allow"
    assert run["variety"]["distinct_pair_ratio"] == 1.0 and run["variety"]["mean_edit_distance"] > 0.3


def test_given_short_small_talk_then_the_proposals_answer_goes_alone():
    # GIVEN difficulty 1 (a short chat message): the seed's N=1
    chain = Chain(REWORDED)
    # WHEN served
    reply, _, run = chain.say("今日めっちゃ寒くない？🥶")
    # THEN no other wording, no evaluation: the draft as it was
    assert wordings(chain.llm) == [] and run is None and reply == DRAFT


def test_a_wording_that_claims_an_action_never_replaces_the_draft():
    # GIVEN a draft out of the persona and another wording in it that says something was sent,
    # which no tool did
    chain = Chain(CLAIMED, proposal=PLAIN)
    # WHEN served
    reply, record, run = chain.say(WORRY)
    # THEN the evaluator preferred the wording, and the constitution's check kept the model's own answer
    assert run is not None and run["chosen"] == 2
    assert reply == PLAIN and "送信しました" not in record["final_response"]


def test_a_shadow_or_an_organisation_without_best_of_n_asks_for_no_wording():
    # GIVEN Best-of-N serving another organisation only
    chain = Chain(REWORDED)
    chain.rt = runtime(chain.llm, best_of_n=BestOfN(orgs=["other-org"]), self_critique_rate=0.0)
    wire_inprocess(chain.rt)
    # WHEN the long message is served
    reply, _, run = chain.say(WORRY)
    # THEN one proposal, no wording, the draft
    assert wordings(chain.llm) == [] and run is None and reply == DRAFT


def primed(llm: InProcessScriptedLLM, rt) -> None:
    """What the turn's proposal call leaves in the prompt cache: the shared prefix written once."""
    warm = turn_of(1)
    with call_context(warm, "responder"):
        integrate(warm, rt)


@pytest.mark.parametrize("difficulty", [2, 3, 4, 5])
def test_the_cost_estimate_is_within_one_and_a_half_times_what_the_fake_model_bills(difficulty):
    # GIVEN the fake Anthropic model's own usage figures (its token count and prompt cache) and a
    # turn of that difficulty whose proposal call already cached the prefix
    llm = InProcessScriptedLLM()
    rt = runtime(llm, best_of_n=BestOfN(orgs=["*"], max_cost_usd_per_turn=1.0))
    rt.llm = LLMCallLog(llm, rt.store, prices=rt.prices)
    primed(llm, rt)
    t = turn_of(difficulty)
    # WHEN Best-of-N phrases its results
    with call_context(t, "responder"):
        integrate(t, rt)
    # THEN the estimate made before any call is within 1.5x of the billed cost of its calls
    run = rt.store.get(f"orgs/{ORG}/evaluations/{t.turn_id}-0")
    assert run is not None and run["n"] == CFG.level(difficulty).n
    ratio = run["estimated_cost_usd"] / run["cost_usd"]
    assert 1 / 1.5 <= ratio <= 1.5, (difficulty, run["estimated_cost_usd"], run["cost_usd"])


@pytest.mark.parametrize(("difficulty", "n"), [(4, 6), (5, 8)])
def test_the_five_cent_cap_keeps_the_seeds_n_at_the_hard_levels(difficulty, n):
    # GIVEN the flags' default cap of $0.05 and the fake model
    llm = InProcessScriptedLLM()
    rt = runtime(llm, best_of_n=BestOfN(orgs=["*"]))
    doc = flags_document(rt)
    assert doc is not None and doc.best_of_n.max_cost_usd_per_turn == 0.05
    primed(llm, rt)
    t = turn_of(difficulty)
    # WHEN phrased
    with call_context(t, "responder"):
        integrate(t, rt)
    # THEN N is the seed's: the estimate no longer cuts it (it did to 3 at difficulty 4)
    assert t.response.best_of_n is not None and t.response.best_of_n["n"] == n


def test_the_estimate_counts_the_prefix_as_a_cache_read_and_the_answer_as_a_reply_not_its_ceiling():
    # GIVEN one phrasing request with a cached Base and a long tool list
    level = CFG.level(4)
    request = LLMRequest(
        call_type="integration",
        model="claude-sonnet-4-6",
        max_tokens=600,
        tools=[{"name": f"tool_{i}", "description": "説明" * 200, "input_schema": {}} for i in range(10)],
        system=[{"type": "text", "text": "ソウルくん" * 2000, "cache_control": {"type": "ephemeral"}}],
        messages=[{"role": "user", "content": "結果を伝えて"}],
    )
    rt = runtime(None)
    prefix, plain = steps_cost.split_prefix(request, CFG)
    one = steps_cost.candidate_cost(request, level, rt.prices, CFG)
    # THEN the prefix is billed at the cache-read price and the answer at the level's reply length
    out = steps_cost.expected_output_tokens(level, request.max_tokens, CFG)
    assert prefix > 10 * plain and out < request.max_tokens
    at_ceiling = rt.prices.cost(request.model, _usage(plain, prefix, request.max_tokens))
    assert one < at_ceiling / 2


def _usage(plain: int, prefix: int, out: int):
    from shared_lib.ports import LLMUsage

    return LLMUsage(input_tokens=plain, cache_read_input_tokens=prefix, output_tokens=out)


def test_variety_of_candidates():
    # identical candidates: the run paid for one answer N times
    same = variety(["了解ウル🐺", "了解 ウル🐺", "了解ウル🐺"])
    assert (same["distinct_pair_ratio"], same["distinct_texts"], same["mean_edit_distance"]) == (0.0, 1, 0.0)
    # all different: every pair differs, the distance is relative to the longer text
    apart = variety(["明日の10時からウル", "あしたの１０時からだよ！", "了解ウル"])
    assert (
        apart["distinct_pair_ratio"] == 1.0
        and 0 < apart["min_edit_distance"] <= apart["mean_edit_distance"] <= 1
    )
    assert variety(["ひとつだけ"])["mean_edit_distance"] is None
    assert edit_distance("kitten", "sitting") == 3 and edit_distance("見積書", "見積もり書") == 2


def test_the_fake_models_other_wordings_differ_from_each_other():
    drafts = [reword(DRAFT, f"（別案{i}）言い回しを変えて") for i in range(2, 9)]
    assert variety(drafts)["distinct_pair_ratio"] == 1.0 and all(
        d.endswith("ウル！") or "ウル" in d for d in drafts
    )


def test_turns_show_prints_the_variety_and_the_judges_pick():
    run = {
        "step": 0,
        "kind": "results",
        "difficulty": 4,
        "n": 6,
        "planned_n": 6,
        "answered": 6,
        "judge": "full",
        "variety": {
            "distinct_texts": 5,
            "distinct_pair_ratio": 0.9333,
            "mean_edit_distance": 0.61,
            "min_edit_distance": 0.0,
        },
        "chosen": 2,
        "chosen_score": 0.87,
        "spread": 0.21,
        "judge_spread": 0.3,
        "regenerated": False,
        "refined": False,
        "estimated_cost_usd": 0.02,
        "cost_usd": 0.016,
        "scores": [
            {
                "index": 1,
                "temperature": 0.1,
                "total": 0.5,
                "judge": 0.5,
                "rules": 1.0,
                "chars": 30,
                "chosen": False,
                "violations": [],
            },
            {
                "index": 2,
                "temperature": 0.3,
                "total": 0.87,
                "judge": 0.9,
                "rules": 1.0,
                "chars": 45,
                "chosen": True,
                "violations": [],
            },
            {
                "index": 3,
                "temperature": 0.5,
                "total": 0.2,
                "judge": 0.3,
                "rules": 0.3,
                "chars": 40,
                "chosen": False,
                "violations": ["iso_date"],
            },
        ],
    }
    text = "\n".join(best_of_n_lines(run))
    assert "difficulty 4, N 6 of 6 planned, 6 answered, judge full" in text
    assert "5 distinct of 6, distinct pairs 0.93, edit distance mean 0.61 min 0.00" in text
    assert "picked     candidate 2 score 0.87" in text and "regenerated no" in text
    assert "(1.25x)" in text and "* #2 t=0.3 total 0.87" in text and "[iso_date]" in text
