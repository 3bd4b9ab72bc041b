"""How long an end-to-end test waits for the stack: the product's own budgets, scaled by the load.

A fixed deadline (「60 s」) is a guess that a busy machine breaks. The stack's functions run with
settings (``Settings``, from the environment the stack gave them) that say how long the product
may take: a turn the ingress admitted may wait up to the admitted backlog
(``CHARTER_ADMITTED_BACKLOG_SECONDS``) before it owns up to being late, its work is bounded by the
turn's budget (``CHARTER_TURN_BUDGET_SECONDS``), a message on a debounced channel first waits out
its window (``CHARTER_DEBOUNCE``), a killed layer's claim is taken over after its lease
(``CHARTER_LEASE_SECONDS``), a delegated job runs for at most ``CHARTER_MAX_TURN_SECONDS``. Every
deadline here is such a promise times the load factor: the one-minute load average per CPU, at
least 1 and at most ``MAX_LOAD_FACTOR``, read when the wait starts.

A wait polls what shows progress (a turn's record, its claims, the fake channel's log) and returns
as soon as its condition holds. Given a progress probe, a deadline that passes while the probe
still changes (the stack is working through a backlog) moves on by one stall window (the turn's
budget, scaled), at most ``EXTENSIONS`` times: a stack that is slow but moving is waited for, a
stuck one fails in bounded time. The e2e tests' own pytest timeout scales with the same factor
(``tests/e2e/conftest.py``).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared_lib.settings import Settings

MAX_LOAD_FACTOR = 4.0
EXTENSIONS = 3
POLL_SECONDS = 0.25
PROGRESS_EVERY_SECONDS = 1.0  # a progress probe reads more than the condition: look less often


def load_factor() -> float:
    """How much slower than a quiet machine this one runs now: load per CPU, within [1, MAX]."""
    try:
        load = os.getloadavg()[0]
    except OSError:  # no load average on this platform: assume a quiet machine
        return 1.0
    return min(MAX_LOAD_FACTOR, max(1.0, load / (os.cpu_count() or 1)))


@dataclass(frozen=True)
class Budgets:
    """The product's time budgets as the stack's functions read them (seconds, unscaled)."""

    settings: Settings

    @classmethod
    def of_stack(cls, root: str | Path) -> Budgets:
        """The settings the stack under ``root`` (its ``.charter/local``) gave its functions."""
        env = json.loads((Path(root) / "function.env.json").read_text(encoding="utf-8"))
        return cls(Settings.from_env(env))

    @property
    def window(self) -> float:
        """The longest debounce window of any channel (0 without one): a debounced channel's
        window follows its sender's rhythm, up to ``debounce_max_seconds``."""
        s = self.settings
        configured = max(s.debounce_seconds.values(), default=0.0)
        return max(configured, s.debounce_max_seconds) if configured > 0 else 0.0

    @property
    def turn(self) -> float:
        """A turn admitted now is answered within this (or told it is late): its debounce window,
        the admitted backlog it may wait, then its processing budget."""
        s = self.settings
        return self.window + s.backlog_seconds + s.turn_budget_seconds

    @property
    def stall(self) -> float:
        """How long one turn's work may show no progress: its processing budget."""
        return self.settings.turn_budget_seconds

    @property
    def steps(self) -> float:
        """A turn of several steps: each step of the loop gets a fresh processing budget."""
        s = self.settings
        return self.window + s.backlog_seconds + s.max_steps * s.turn_budget_seconds

    @property
    def after_kill(self) -> float:
        """A turn whose layer was killed mid-claim: the lease runs out, then the turn goes on."""
        return self.settings.lease_seconds + self.turn

    @property
    def job(self) -> float:
        """A delegated job's turn: its own admission and its steps, within the loop's wall clock."""
        return self.turn + self.settings.max_turn_seconds

    @property
    def peer_health(self) -> float:
        """How long the peers' health board keeps a peer marked down before it is tried again."""
        return self.settings.peer_health_seconds


def scaled(seconds: float) -> float:
    return seconds * load_factor()


def wait_for(
    predicate: Callable[[], Any],
    seconds: float,
    *,
    budgets: Budgets | None = None,
    progress: Callable[[], Any] | None = None,
    what: str = "condition",
    interval: float = POLL_SECONDS,
) -> Any:
    """``predicate()``'s first truthy value, polled every ``interval`` until ``seconds`` (scaled
    by the load factor) have passed; with ``progress``, a deadline passed while its value still
    changes is extended."""
    factor = load_factor()
    start = time.monotonic()
    end = start + seconds * factor
    stall = (budgets.stall if budgets else seconds) * factor
    extensions = 0
    last = progress() if progress else None
    moved_at = probed_at = start
    while True:
        value = predicate()
        if value:
            return value
        now = time.monotonic()
        if progress is not None and (now - probed_at >= PROGRESS_EVERY_SECONDS or now > end):
            seen, probed_at = progress(), now
            if seen != last:
                last, moved_at = seen, now
        if now > end:
            if progress is not None and now - moved_at < stall and extensions < EXTENSIONS:
                end, extensions = now + stall, extensions + 1
            else:
                waited = now - start
                raise AssertionError(
                    f"{what} not met within {waited:.0f}s "
                    f"({seconds:.0f}s of the product's budgets x load factor {factor:.1f}, "
                    f"{extensions} extension(s) for progress)"
                )
        time.sleep(interval)  # the poll's interval, not a wait for anything
