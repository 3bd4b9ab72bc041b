"""What a Best-of-N run will cost, estimated before any call, and the N that fits the cap.

The estimate is of what the calls are expected to use, not of their ceilings, and each part is
counted as the provider bills it:

* a candidate's **prefix** (the tools and the system blocks up to the last one marked for the
  cache) is a cache read: the proposal call of the same turn wrote it moments before; the
  system blocks after it and the message are plain input;
* a candidate's **answer** is about the reply the level asks for (``ideal_chars`` of the level
  times ``output_margin``), never more than its ``max_tokens`` — not the ``max_tokens``
  itself, which a 3-5 sentence reply never reaches (that made the estimate 4-5 times the real
  cost and the cap cut N from 6 to 3);
* the **judge** is the very request it will be (``steps_evaluator.judge_request``) over N
  answers of that expected length, answering one score row per candidate;
* the **refinement** reads the question and one answer and writes one.

Tokens are ``chars_per_token`` characters of the request as it is sent. The figures to check it
against are the provider's usage fields of each call (``input_tokens``,
``cache_read_input_tokens``, ``cache_creation_input_tokens``, ``output_tokens``): a run's
evaluation document keeps ``estimated_cost_usd`` beside ``cost_usd`` (the sum of its calls'
billed usage) and ``charter turns show`` prints both.

>>> from shared_lib.features.best_of_n.state import load_best_of_n_config
>>> cfg = load_best_of_n_config()
>>> expected_output_tokens(cfg.level(4), 600, cfg) == round(220 * cfg.output_margin / cfg.chars_per_token)
True
"""

from __future__ import annotations

import json
import math
from typing import Any

from shared_lib.features.best_of_n import steps_evaluator as evaluator
from shared_lib.features.best_of_n.state import BestOfNConfig, Level
from shared_lib.persona.core import PersonaCore, load_core
from shared_lib.ports import LLMRequest, LLMUsage
from shared_lib.prices import PriceTable

# what a candidate after the first adds to the system: a line asking for another wording (steps._variant)
VARIANT_ASK = "（別案{i}）ありがちな言い回しを避け、表現や順序を変えて同じ内容を答えてください。"
# one row of the judge's answer, as its instructions ask for it
_JUDGE_ROW = '{"index": 1, "quality": 7, "persona": 8, "rules": 9}, '


def tokens(value: Any, chars_per_token: int) -> int:
    """The tokens of a request part: its characters as sent (strings as they are, the rest as JSON)."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return math.ceil(len(text) / chars_per_token) if text else 0


def _text_of(block: Any) -> Any:
    return block.get("text", "") if isinstance(block, dict) else block


def split_prefix(request: LLMRequest, cfg: BestOfNConfig) -> tuple[int, int]:
    """(cached prefix tokens, plain input tokens) of one request: the tools and the system blocks
    up to the last one marked for the cache, then the rest of the system and the messages."""
    cpt = cfg.chars_per_token
    marked = [i for i, b in enumerate(request.system) if isinstance(b, dict) and b.get("cache_control")]
    cut = marked[-1] + 1 if marked else 0  # nothing marked: the whole request is plain input
    tools = [{k: v for k, v in t.items() if k != "cache_control"} for t in request.tools]
    head = (tokens(tools, cpt) if tools else 0) + sum(tokens(_text_of(b), cpt) for b in request.system[:cut])
    rest = sum(tokens(_text_of(b), cpt) for b in request.system[cut:])
    rest += sum(tokens(m.get("content", ""), cpt) for m in request.messages)
    return (head, rest) if marked else (0, head + rest)


def expected_output_tokens(level: Level, max_tokens: int, cfg: BestOfNConfig) -> int:
    """The tokens of one candidate's answer: the level's reply length with the margin, capped."""
    return min(max_tokens, round(level.ideal_chars * cfg.output_margin / cfg.chars_per_token))


def candidate_cost(request: LLMRequest, level: Level, prices: PriceTable, cfg: BestOfNConfig) -> float:
    prefix, plain = split_prefix(request, cfg)
    # from the second candidate on a short line asks for another wording (``steps._variant``)
    plain += tokens(VARIANT_ASK.format(i=8), cfg.chars_per_token)
    out = expected_output_tokens(level, request.max_tokens, cfg)
    return prices.cost(
        request.model, LLMUsage(input_tokens=plain, cache_read_input_tokens=prefix, output_tokens=out)
    )


def judge_cost(
    n: int,
    level: Level,
    request: LLMRequest,
    question: str,
    core: PersonaCore,
    judge_model: str,
    prices: PriceTable,
    cfg: BestOfNConfig,
) -> float:
    """The judge's call over ``n`` answers of the expected length (the request it will send)."""
    cpt = cfg.chars_per_token
    answer_chars = expected_output_tokens(level, request.max_tokens, cfg) * cpt
    judge = evaluator.judge_request(question, ["ウ" * answer_chars] * n, cfg, core, judge_model)
    _, plain = split_prefix(judge, cfg)
    out = min(cfg.judge.max_tokens, tokens('{"scores": []}' + _JUDGE_ROW * n, cpt))
    return prices.cost(judge_model, LLMUsage(input_tokens=plain, output_tokens=out))


def refine_cost(
    level: Level, request: LLMRequest, question: str, prices: PriceTable, cfg: BestOfNConfig
) -> float:
    cpt = cfg.chars_per_token
    prefix, plain = split_prefix(request.model_copy(update={"messages": []}), cfg)
    out = expected_output_tokens(level, cfg.refine.max_tokens, cfg)
    plain += tokens(cfg.refine.instructions, cpt) + tokens(question, cpt) + out
    return prices.cost(
        request.model, LLMUsage(input_tokens=plain, cache_read_input_tokens=prefix, output_tokens=out)
    )


def estimated_cost(
    n: int,
    level: Level,
    request: LLMRequest,
    judge_model: str,
    prices: PriceTable,
    cfg: BestOfNConfig,
    *,
    question: str = "",
    core: PersonaCore | None = None,
    paid: int = 0,
) -> float:
    """What ``n`` candidates (``paid`` of them already answered: a text answer's draft), the
    judge when the level runs it and the refinement when it refines are expected to cost."""
    total = max(0, n - paid) * candidate_cost(request, level, prices, cfg)
    if level.judge == "full" and n >= 2:
        total += judge_cost(n, level, request, question, core or load_core(), judge_model, prices, cfg)
    if level.refine:
        total += refine_cost(level, request, question, prices, cfg)
    return total


def plan(
    level: Level,
    request: LLMRequest,
    judge_model: str,
    prices: PriceTable,
    cfg: BestOfNConfig,
    cap: float,
    *,
    question: str = "",
    core: PersonaCore | None = None,
    paid: int = 0,
) -> tuple[int, float]:
    """(N, its estimated cost): the level's N, lowered until it fits ``cap`` (1: the plain call)."""
    for n in range(level.n, 1, -1):
        cost = estimated_cost(
            n, level, request, judge_model, prices, cfg, question=question, core=core, paid=paid
        )
        if cost <= cap:
            return n, cost
    single = level.model_copy(update={"judge": "none", "refine": False})
    return 1, estimated_cost(1, single, request, judge_model, prices, cfg, paid=paid)
