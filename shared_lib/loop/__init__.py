"""The loop controller of seed 002 §3 (multi-step turns): ``decide`` after each step, then
``take_step`` (back to the brain with ``step + 1``) or ``stop``. Fixed logic: every step is
proposed by the brain and judged by the guardian and the gate like a first step."""

from shared_lib.loop.controller import LoopDecision, LoopLimits, decide, done, worker_output
from shared_lib.loop.state import stop, take_step

__all__ = ["LoopDecision", "LoopLimits", "decide", "done", "stop", "take_step", "worker_output"]
