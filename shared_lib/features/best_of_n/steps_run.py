"""One Best-of-N run (seed 001 §3-4), whatever it phrases: the candidates on a bounded pool, the
judge, the evaluation, at most one regeneration, the refinement, and its evidence.

``choose`` is reached from ``steps.phrase`` (tool results) and ``steps.phrase_text`` (a text
answer, whose proposal is the first candidate, already paid for). The evidence is one document
``orgs/{org}/evaluations/{turn}-{step}`` (scores, the judge's picks, the candidates' variety,
estimated and billed cost; no texts), an ``evaluation`` map on each candidate's call-log entry,
and ``turn.response.best_of_n``, the run's summary on the turn (the responder's trail detail).
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

from shared_lib import collections
from shared_lib.brain.accounting import add_call_usage
from shared_lib.brain.config import load_brain_config
from shared_lib.brain.continuation import complete
from shared_lib.brain.reply_checks import internal_names
from shared_lib.errors import LLMError
from shared_lib.features.best_of_n import steps_evaluator as evaluator
from shared_lib.features.best_of_n.state import BestOfNConfig, Level, load_best_of_n_config
from shared_lib.features.best_of_n.state_variety import variety
from shared_lib.features.best_of_n.steps_cost import VARIANT_ASK
from shared_lib.observability.logs import log_event
from shared_lib.persona.core import load_core
from shared_lib.ports import LLMRequest, LLMResponse
from shared_lib.privacy.sanitizer import Sanitizer
from shared_lib.turn.callctx import remaining
from shared_lib.turn.envelope import Turn

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime

EVALUATION_TTL = timedelta(days=90)  # counts and scores only, no text: the monitor's window
Kind = Literal["results", "text_answer"]


@dataclass
class Candidate:
    index: int  # 1-based, in temperature order
    temperature: float | None  # None: the proposal's own answer (a text answer's first candidate)
    text: str
    call_id: str | None
    scores: evaluator.Scores | None = None


@dataclass
class Run:
    kind: Kind
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


def choose(
    turn: Turn,
    rt: Runtime,
    request: LLMRequest,
    run: Run,
    *,
    question: str,
    judge_model: str,
    draft: str | None = None,
) -> str:
    """The best candidate's text (refined at the levels that refine); ``""`` when every candidate
    of the set and of its one regeneration broke a rule. ``draft``: an answer already made, the
    first candidate (the others are indices 2..N)."""
    cfg = load_best_of_n_config()
    core = load_core()
    ctx = evaluator.RuleContext(
        core=core,
        internal_names=internal_names(rt.registry),
        own_placeholders=frozenset(Sanitizer.default().mask(turn.inbound.text)[1]),
    )
    before = turn.usage.model_copy(deep=True)
    record = _locked(partial(add_call_usage, turn, rt.prices), threading.Lock())
    first = [Candidate(1, None, draft, None)] if draft else []
    slots = [(i, t) for i, t in enumerate(cfg.temperatures[: run.n], 1)][len(first) :]
    for _ in range(2):  # the set and at most one regeneration
        run.candidates = first + _candidates(rt, request, slots, cfg, record, allow_none=bool(first))
        verdict = _judge(rt, run, question, cfg, core, judge_model, record)
        texts = [c.text for c in run.candidates]
        scored = evaluator.score_all(texts, verdict, ctx, cfg, ideal_chars=run.level.ideal_chars)
        for c, s in zip(run.candidates, scored, strict=True):
            c.scores = s
        passing = [c for c in run.candidates if c.scores and c.scores.rules >= cfg.rule_threshold]
        if passing:
            run.chosen = max(passing, key=lambda c: c.scores.total if c.scores else 0.0)
            break
        run.regenerated = True  # the second set is the last: then the templates
    text = run.chosen.text if run.chosen else ""
    if run.chosen is not None and run.level.refine:
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
        update["system"] = [*request.system, {"type": "text", "text": VARIANT_ASK.format(i=i)}]
    return request.model_copy(update=update)


def _candidates(
    rt: Runtime,
    request: LLMRequest,
    slots: list[tuple[int, float]],
    cfg: BestOfNConfig,
    record: Callable[[LLMRequest, LLMResponse], object],
    *,
    allow_none: bool = False,
) -> list[Candidate]:
    """Every candidate that answered, in temperature order; ``LLMError`` when none did (unless
    ``allow_none``: a text answer still has its draft)."""
    pool = ThreadPoolExecutor(max_workers=max(1, min(cfg.max_workers, len(slots))))
    futures: list[Future[LLMResponse]] = [
        # each candidate in its own copy of this context: the turn, the budget, the span
        pool.submit(contextvars.copy_context().run, _one, rt, _variant(request, i, t), record)
        for i, t in slots
    ]
    left = remaining()
    wait(futures, timeout=None if left is None else max(0.0, left))
    # past the budget the late candidates are left behind (not waited on; queued ones cancelled)
    pool.shutdown(wait=False, cancel_futures=True)
    out, failure = [], None
    for (i, t), f in zip(slots, futures, strict=True):
        if not f.done() or f.exception() is not None:
            failure = f.exception() if f.done() else LLMError("api_timeout", "candidate past the turn budget")
            continue
        response = f.result()
        text = response.text().strip()
        if text:
            out.append(Candidate(i, t, text, response.call_id))
    if not out and not allow_none:
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
            "chars": len(c.text),
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
    spread = round(evaluator.spread(totals), 4)
    varied = variety([c.text for c in run.candidates])
    doc = {
        "at": now,
        "org_id": turn.org_id,
        "turn_id": turn.turn_id,
        "step": turn.step,
        "kind": run.kind,
        "difficulty": run.difficulty,
        "planned_n": run.planned_n,
        "n": run.n,
        "answered": len(run.candidates),
        "judge": run.judge,
        "scores": rows,
        "spread": spread,
        "judge_spread": round(evaluator.spread(judged), 4) if judged else None,
        "variety": varied,
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
        "kind": run.kind,
        "judge": run.judge,
        "distinct_pair_ratio": varied["distinct_pair_ratio"],
        "mean_edit_distance": varied["mean_edit_distance"],
    }
    log_event(
        "best_of_n",
        layer="responder" if run.kind == "results" else "brain",
        n=run.n,
        difficulty=run.difficulty,
        chosen=chosen,
        judge=run.judge,
        kind=run.kind,
        distinct_pair_ratio=varied["distinct_pair_ratio"],
    )
