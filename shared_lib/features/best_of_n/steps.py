"""Best-of-N phrasing of the reply text (seed 001 §3-4), per organisation, off by default.

``phrase`` replaces the one phrasing call of ``brain.integration`` when the flags' ``best_of_n``
block lists the turn's organisation:

1. **Difficulty** 1-5 (``features.best_of_n.state_difficulty``, code only) → N, judge and refinement
   (``config/best_of_n.json`` ``levels``: 1/2/4/6/8; no judge at 1-2, the code's axes only at 3,
   the judge too at 4-5, refinement at 5).
2. **Cost cap**: the calls are estimated before any is made (prompt characters / 4 in, the
   ``max_tokens`` out, the price table) and N is lowered until the candidates, the judge and the
   refinement fit the flags' ``max_cost_usd_per_turn``; N = 1 is the plain single call.
3. **Candidates** in parallel on a bounded thread pool, temperatures the config's first N; each
   runs in a copy of the caller's context (``contextvars``), so the call log, the local-only
   guard, the budget and the spans see the turn. A failed candidate is skipped; none left →
   ``LLMError`` (the caller's fallback: the persona's templates). The pool is waited on no longer
   than the turn's budget (``callctx.remaining``).
4. **Evaluation** (``features.best_of_n.steps_evaluator``); every candidate's rule score under the threshold → one
   regeneration of the whole set; still under → ``""`` (the templates: never a rule-breaking text).
5. **Refinement** (difficulty 5): one call with the best candidate and the input, kept only when
   its rule score is at least the best candidate's.
6. **Evidence**: each candidate's entry of the LLM call log gains an ``evaluation`` map, one
   document ``orgs/{org}/evaluations/{turn}-{step}`` per run (scores, spread, chosen, no texts),
   and ``turn.response.best_of_n`` (N, chosen) for the responder's trail detail.
"""

from __future__ import annotations

import contextvars
import json
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial
from typing import TYPE_CHECKING, Any

from shared_lib import collections
from shared_lib.brain.accounting import add_call_usage
from shared_lib.brain.config import load_brain_config
from shared_lib.brain.continuation import complete
from shared_lib.brain.models import fast_model, flags_document
from shared_lib.brain.reply_checks import internal_names
from shared_lib.errors import LLMError
from shared_lib.features.best_of_n import steps_evaluator as evaluator
from shared_lib.features.best_of_n.state import BestOfNConfig, Level, load_best_of_n_config
from shared_lib.features.best_of_n.state_difficulty import estimate
from shared_lib.flags.document import BestOfN
from shared_lib.observability.logs import log_event
from shared_lib.persona.core import load_core
from shared_lib.ports import LLMRequest, LLMResponse, LLMUsage
from shared_lib.prices import PriceTable
from shared_lib.privacy.sanitizer import Sanitizer
from shared_lib.turn.callctx import remaining
from shared_lib.turn.envelope import ToolResult, Turn

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime

EVALUATION_TTL = timedelta(days=90)  # counts and scores only, no text: the monitor's window


@dataclass
class Candidate:
    index: int  # 1-based, in temperature order
    temperature: float
    text: str
    call_id: str | None
    scores: evaluator.Scores | None = None


@dataclass
class Run:
    difficulty: int
    level: Level
    planned_n: int
    n: int
    estimated_cost_usd: float
    judge: str = "none"  # none | heuristics | full | unparsed | skipped (budget)
    candidates: list[Candidate] = field(default_factory=list)
    chosen: Candidate | None = None
    regenerated: bool = False
    refined: bool = False


def settings_for(turn: Turn, rt: Runtime) -> BestOfN | None:
    """The flags' ``best_of_n`` block when it serves the turn's organisation, else ``None``."""
    doc = flags_document(rt)
    return doc.best_of_n if doc is not None and doc.best_of_n.enabled_for(turn.org_id) else None


def _tokens(value: Any, chars_per_token: int) -> int:
    return len(json.dumps(value, ensure_ascii=False)) // chars_per_token + 1


def estimated_cost(
    n: int, level: Level, request: LLMRequest, judge_model: str, prices: PriceTable, cfg: BestOfNConfig
) -> float:
    """What ``n`` candidates, the judge (when the level runs it) and the refinement would cost at
    most: every answer its ``max_tokens``; the tools and system a cache read (the phrasing call
    shares the proposal call's cached prefix), the messages plain input."""
    cpt = cfg.chars_per_token
    prefix, body = _tokens([request.tools, request.system], cpt), _tokens(request.messages, cpt)
    one = prices.cost(
        request.model,
        LLMUsage(input_tokens=body, cache_read_input_tokens=prefix, output_tokens=request.max_tokens),
    )
    total = n * one
    if level.judge == "full":
        judge_in = body + n * request.max_tokens + len(cfg.judge.instructions) // cpt
        total += prices.cost(judge_model, LLMUsage(input_tokens=judge_in, output_tokens=cfg.judge.max_tokens))
    if level.refine:
        refine_in = LLMUsage(
            input_tokens=body + request.max_tokens,
            cache_read_input_tokens=prefix,
            output_tokens=cfg.refine.max_tokens,
        )
        total += prices.cost(request.model, refine_in)
    return total


def plan(
    level: Level, request: LLMRequest, judge_model: str, prices: PriceTable, cfg: BestOfNConfig, cap: float
) -> tuple[int, float]:
    """(N, its estimated cost): the level's N, lowered until it fits ``cap`` (1: the plain call)."""
    for n in range(level.n, 1, -1):
        cost = estimated_cost(n, level, request, judge_model, prices, cfg)
        if cost <= cap:
            return n, cost
    return 1, estimated_cost(
        1, level.model_copy(update={"judge": "none", "refine": False}), request, judge_model, prices, cfg
    )


def phrase(
    turn: Turn,
    rt: Runtime,
    request: LLMRequest,
    *,
    question: str,
    results: list[ToolResult],
    flags: BestOfN,
    single: Callable[[LLMRequest], str],
) -> str:
    """The reply text chosen among N candidates (``""``: let the templates answer)."""
    cfg = load_best_of_n_config()
    difficulty = estimate(
        turn.brain_text(), results, route=turn.route.route, steps=len(turn.loop.steps), cfg=cfg
    )
    level = cfg.level(difficulty)
    judge_model = fast_model(rt)
    n, cost = plan(level, request, judge_model, rt.prices, cfg, flags.max_cost_usd_per_turn)
    run = Run(difficulty, level, level.n, n, round(cost, 8))
    if n == 1:
        turn.response.best_of_n = {"difficulty": difficulty, "n": 1, "planned_n": level.n}
        return single(request)
    core = load_core()
    ctx = evaluator.RuleContext(
        core=core,
        internal_names=internal_names(rt.registry),
        own_placeholders=frozenset(Sanitizer.default().mask(turn.inbound.text)[1]),
    )
    before = turn.usage.model_copy(deep=True)
    lock = threading.Lock()
    record = _locked(partial(add_call_usage, turn, rt.prices), lock)
    for _ in range(2):  # the set and at most one regeneration
        run.candidates = _candidates(rt, request, cfg.temperatures[:n], cfg, record)
        verdict = _judge(rt, run, question, cfg, core, judge_model, record)
        texts = [c.text for c in run.candidates]
        for c, s in zip(
            run.candidates,
            evaluator.score_all(texts, verdict, ctx, cfg, ideal_chars=level.ideal_chars),
            strict=True,
        ):
            c.scores = s
        passing = [c for c in run.candidates if c.scores and c.scores.rules >= cfg.rule_threshold]
        if passing:
            run.chosen = max(passing, key=lambda c: c.scores.total if c.scores else 0.0)
            break
        run.regenerated = True  # the second set is the last: then the templates
    text = run.chosen.text if run.chosen else ""
    if run.chosen is not None and level.refine:
        text = _refine(rt, run, request, question, cfg, ctx, record)
    _evidence(turn, rt, run, cost_usd=turn.usage.since(before).cost_usd)
    return text


def _locked(
    fn: Callable[[LLMRequest, LLMResponse], object], lock: threading.Lock
) -> Callable[[LLMRequest, LLMResponse], object]:
    def run(request: LLMRequest, response: LLMResponse) -> object:
        with lock:  # the candidates' threads add to one turn's usage
            return fn(request, response)

    return run


def _one(
    rt: Runtime, request: LLMRequest, record: Callable[[LLMRequest, LLMResponse], object]
) -> LLMResponse:
    assert rt.llm is not None
    cfg = load_brain_config()
    return complete(
        rt.llm, request, max_continuations=cfg.max_continuations, cap=cfg.max_tokens.cap, record=record
    ).response


def _variant(request: LLMRequest, i: int, temperature: float) -> LLMRequest:
    """Candidate ``i``'s request: its temperature (for peers that take one), and from the second
    on a line asking for another wording — Claude's API takes no temperature (API 2026-10-21), so
    without it N candidates of one prompt would be N copies. Appended last: the cached prefix
    of the system stays the same."""
    update: dict[str, Any] = {"temperature": temperature}
    if i > 1:
        ask = f"（別案{i}）ありがちな言い回しを避け、表現や順序を変えて同じ内容を答えてください。"
        update["system"] = [*request.system, {"type": "text", "text": ask}]
    return request.model_copy(update=update)


def _candidates(
    rt: Runtime,
    request: LLMRequest,
    temperatures: list[float],
    cfg: BestOfNConfig,
    record: Callable[[LLMRequest, LLMResponse], object],
) -> list[Candidate]:
    """Every candidate that answered, in temperature order; ``LLMError`` when none did."""
    pool = ThreadPoolExecutor(max_workers=min(cfg.max_workers, len(temperatures)))
    futures: list[Future[LLMResponse]] = [
        # each candidate in its own copy of this context: the turn, the budget, the span
        pool.submit(contextvars.copy_context().run, _one, rt, _variant(request, i, t), record)
        for i, t in enumerate(temperatures, 1)
    ]
    left = remaining()
    wait(futures, timeout=None if left is None else max(0.0, left))
    # past the budget the late candidates are left behind (not waited on; queued ones cancelled)
    pool.shutdown(wait=False, cancel_futures=True)
    out, failure = [], None
    for i, (t, f) in enumerate(zip(temperatures, futures, strict=True), 1):
        if not f.done() or f.exception() is not None:
            failure = f.exception() if f.done() else LLMError("api_timeout", "candidate past the turn budget")
            continue
        response = f.result()
        text = response.text().strip()
        if text:
            out.append(Candidate(i, t, text, response.call_id))
    if not out:
        raise (
            failure
            if isinstance(failure, LLMError)
            else LLMError("llm_unavailable", f"no candidate answered: {failure}")
        )
    return out


def _judge(
    rt: Runtime,
    run: Run,
    question: str,
    cfg: BestOfNConfig,
    core: Any,
    model: str,
    record: Callable[[LLMRequest, LLMResponse], object],
) -> dict[int, evaluator.JudgeScore] | None:
    if run.level.judge != "full" or len(run.candidates) < 2:
        run.judge = "heuristics" if run.level.judge != "none" else "none"
        return None
    left = remaining()
    if left is not None and left <= 0:
        run.judge = "skipped"
        return None
    request = evaluator.judge_request(question, [c.text for c in run.candidates], cfg, core, model)
    try:
        answer = _one(rt, request, record)
    except LLMError as exc:
        log_event("best_of_n_judge_failed", layer="responder", severity="WARNING", error=exc.code)
        run.judge = "unparsed"
        return None
    verdict = evaluator.parse_verdict(answer.text(), len(run.candidates))
    run.judge = "full" if verdict is not None else "unparsed"
    return verdict


def _refine(
    rt: Runtime,
    run: Run,
    request: LLMRequest,
    question: str,
    cfg: BestOfNConfig,
    ctx: evaluator.RuleContext,
    record: Callable[[LLMRequest, LLMResponse], object],
) -> str:
    assert run.chosen is not None and run.chosen.scores is not None
    best = run.chosen.text
    left = remaining()
    if left is not None and left <= 0:
        return best
    body = f"{cfg.refine.instructions}\n\n【依頼と結果】\n{question}\n\n【回答案】\n{best}"
    follow = request.model_copy(
        update={
            "messages": [{"role": "user", "content": body}],
            "max_tokens": cfg.refine.max_tokens,
            "temperature": None,
        }
    )
    try:
        refined = _one(rt, follow, record).text().strip()
    except LLMError:
        return best
    score, _ = evaluator.rule_code_score(refined, ctx, cfg)
    if refined and score >= run.chosen.scores.rules:
        run.refined = True
        return refined
    return best


def _evidence(turn: Turn, rt: Runtime, run: Run, *, cost_usd: float) -> None:
    """Scores on each candidate's call-log entry, one evaluation document, the turn's summary."""
    chosen = run.chosen.index if run.chosen else None
    totals = [c.scores.total for c in run.candidates if c.scores]
    judged = [c.scores.judge for c in run.candidates if c.scores and c.scores.judge is not None]
    rows = [
        {
            "index": c.index,
            "temperature": c.temperature,
            **(c.scores.as_dict() if c.scores else {}),
            "chosen": c.index == chosen,
        }
        for c in run.candidates
    ]
    for c, row in zip(run.candidates, rows, strict=True):
        if c.call_id:
            rt.store.set(
                collections.path("llm_calls", org=turn.org_id, id=c.call_id), {"evaluation": row}, merge=True
            )
    now = rt.clock()
    doc = {
        "at": now,
        "org_id": turn.org_id,
        "turn_id": turn.turn_id,
        "step": turn.step,
        "difficulty": run.difficulty,
        "planned_n": run.planned_n,
        "n": run.n,
        "answered": len(run.candidates),
        "judge": run.judge,
        "scores": rows,
        "spread": round(evaluator.spread(totals), 4),
        "judge_spread": round(evaluator.spread(judged), 4) if judged else None,
        "chosen": chosen,
        "chosen_score": round(run.chosen.scores.total, 4) if run.chosen and run.chosen.scores else None,
        "regenerated": run.regenerated,
        "refined": run.refined,
        "fallback": chosen is None,
        "estimated_cost_usd": run.estimated_cost_usd,
        "cost_usd": round(cost_usd, 8),
        "expires_at": now + EVALUATION_TTL,
    }
    rt.store.set(collections.path("evaluations", org=turn.org_id, id=f"{turn.turn_id}-{turn.step}"), doc)
    turn.response.best_of_n = {
        "difficulty": run.difficulty,
        "n": run.n,
        "chosen": chosen,
        "regenerated": run.regenerated,
    }
    log_event(
        "best_of_n", layer="responder", n=run.n, difficulty=run.difficulty, chosen=chosen, judge=run.judge
    )
