"""How hard a reply is to phrase, 1-5, estimated by code from what the turn holds (no LLM call).

Seed 001 §4.4 asks a small model for the difficulty; this product knows more than the input
text when it phrases a reply (the results of the tools, the steps taken), so code counts it:
one point to start, and one more for each of a long input, several results, a multi-step turn,
a list in a result worth telling item by item, a failure among the results, a route other than
plain chat. The thresholds are data (``config/best_of_n.json`` ``difficulty``); the mapping of
difficulty to N, judge and refinement is the config's ``levels``.

>>> from shared_lib.features.best_of_n.state import load_best_of_n_config
>>> estimate("ありがとう", [], route="CHAT", steps=0, cfg=load_best_of_n_config())
1
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from shared_lib.features.best_of_n.state import BestOfNConfig
from shared_lib.turn.envelope import ToolResult


def _longest_list(value: Any) -> int:
    if isinstance(value, list):
        return max([len(value), *(_longest_list(v) for v in value)])
    if isinstance(value, dict):
        return max([0, *(_longest_list(v) for v in value.values())])
    return 0


def estimate(text: str, results: Sequence[ToolResult], *, route: str, steps: int, cfg: BestOfNConfig) -> int:
    """The difficulty (1-5) of phrasing ``results`` for the input ``text``."""
    rules = cfg.difficulty
    points = [
        len(text.strip()) > rules.long_input_chars,
        len(results) >= rules.many_results,
        steps > 0,
        any(_longest_list(r.result) >= rules.long_list for r in results),
        any(not r.ok for r in results),
        route not in ("", "CHAT"),
    ]
    return min(5, 1 + sum(points))
