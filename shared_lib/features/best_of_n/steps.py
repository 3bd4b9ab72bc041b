"""Best-of-N phrasing of the reply text (seed 001 §3-4), per organisation (off unless the flags list it).

Two ways in, when the flags' ``best_of_n`` block lists the turn's organisation and the turn may
spend on extras (not a shadow's dry run):

* ``phrase`` replaces the one phrasing call of ``brain.integration`` (the tool results told);
* ``phrase_text`` gives a text answer of the proposal (seed 001 §5.3: 通常応答 → Best-of-N) its
  other wordings; the proposal's answer is the first candidate, already paid for, and stays the
  answer when nothing better keeps the rules. The brain calls it before the guardian, so the
  guardian judges the text that will be sent.

1. **Difficulty** 1-5 (``features.best_of_n.state_difficulty``, code only) → N, judge and refinement
   (``config/best_of_n.json`` ``levels``: 1/2/4/6/8; no judge at 1-2, the code's axes only at 3,
   the judge too at 4-5, refinement at 5). Difficulty 1 is the plain single call (a text
   answer: the proposal's own), as the seed's N=1.
2. **Cost cap**: the calls are estimated before any is made (``steps_cost``: what they are
   expected to use, the prefix a cache read) and N is lowered until the candidates, the judge
   and the refinement fit the flags' ``max_cost_usd_per_turn``.
3. **Candidates** in parallel on a bounded thread pool (``steps_run``), temperatures the
   config's first N, each in a copy of the caller's context (call log, local-only guard,
   budget, spans). A failed candidate is skipped; none left → ``LLMError`` (the caller's
   fallback: the persona's templates) — a text answer keeps its draft.
4. **Evaluation** (``steps_evaluator``); every candidate under the rule threshold → one
   regeneration of the whole set; still under → ``""`` (the templates; a text answer: its draft).
5. **Refinement** (difficulty 5): one call with the best candidate and the input, kept only when
   its rule score is at least the best candidate's.
6. **Evidence** (``steps_run._evidence``): scores, the judge's picks, the candidates' variety
   (``state_variety``), estimated and billed cost on ``orgs/{org}/evaluations/{turn}-{step}``
   and, summed up, on ``turn.response.best_of_n``; ``charter turns show`` prints them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from shared_lib.brain.integration import phrasing_request
from shared_lib.brain.models import fast_model, flags_document
from shared_lib.features.best_of_n.state import BestOfNConfig, Level, load_best_of_n_config
from shared_lib.features.best_of_n.state_difficulty import estimate
from shared_lib.features.best_of_n.steps_cost import plan
from shared_lib.features.best_of_n.steps_run import Run, choose
from shared_lib.flags.document import BestOfN
from shared_lib.persona.core import load_core
from shared_lib.ports import LLMRequest
from shared_lib.turn.envelope import ToolResult, Turn

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime


def settings_for(turn: Turn, rt: Runtime) -> BestOfN | None:
    """The flags' ``best_of_n`` block when it serves the turn's organisation, else ``None``."""
    doc = flags_document(rt)
    return doc.best_of_n if doc is not None and doc.best_of_n.enabled_for(turn.org_id) else None


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
    n, cost = _plan(rt, level, request, judge_model, cfg, flags, question)
    if n == 1:
        turn.response.best_of_n = {"difficulty": difficulty, "n": 1, "planned_n": level.n}
        return single(request)
    run = Run("results", difficulty, level, level.n, n, round(cost, 8))
    return choose(turn, rt, request, run, question=question, judge_model=judge_model)


def _plan(
    rt: Runtime,
    level: Level,
    request: LLMRequest,
    judge_model: str,
    cfg: BestOfNConfig,
    flags: BestOfN,
    question: str,
    *,
    paid: int = 0,
) -> tuple[int, float]:
    """``plan`` with what every phrasing passes it: the prices, the flags' cap and the persona core."""
    return plan(
        level,
        request,
        judge_model,
        rt.prices,
        cfg,
        flags.max_cost_usd_per_turn,
        question=question,
        core=load_core(),
        paid=paid,
    )


def phrase_text(turn: Turn, rt: Runtime, *, user_text: str, draft: str, flags: BestOfN) -> str:
    """A text answer chosen among the proposal's ``draft`` and its other wordings; the draft
    itself when the difficulty is 1, the cap allows no second candidate, or no other wording
    keeps the rules. ``user_text`` and ``draft`` as the model saw and wrote them (masked)."""
    cfg = load_best_of_n_config()
    difficulty = estimate(user_text, [], route=turn.route.route, steps=len(turn.loop.steps), cfg=cfg)
    level = cfg.level(difficulty)
    if level.n < 2:
        return draft
    ask = cfg.text_answer
    content = f"{ask.instructions}\n\n<message>\n{user_text}\n</message>\n<draft>\n{draft}\n</draft>"
    request = phrasing_request(turn, rt, content, max_tokens=ask.max_tokens)
    judge_model = fast_model(rt)
    n, cost = _plan(rt, level, request, judge_model, cfg, flags, user_text, paid=1)
    if n < 2:
        return draft
    run = Run("text_answer", difficulty, level, level.n, n, round(cost, 8))
    return choose(turn, rt, request, run, question=user_text, judge_model=judge_model, draft=draft) or draft
