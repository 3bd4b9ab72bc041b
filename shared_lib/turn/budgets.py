"""A turn's processing budget counts work, never the time the turn waited (issue 33).

The ingress admits a turn (``admit``): when, and how many seconds of processing it gets
(``CHARTER_TURN_BUDGET_SECONDS``, seed 000's 45 s) and how long a wait it may have before
its reply says it came late (``CHARTER_ADMITTED_BACKLOG_SECONDS``). The layer runner then
brackets every stage's run: ``begin`` adds the wait since the previous stage ended (a Pub/Sub
backlog, a redelivery after a crash, a claim held by another instance) to ``queued_ms`` and
returns the instant this stage's budget runs out; ``spend`` adds the stage's own run time to
``spent_ms``. A stage whose process died leaves nothing on the envelope, so its redelivery
starts with what was left. Every LLM call is bounded by what is left (``callctx.remaining``);
a step of the loop gets a fresh budget (``new_step``).

``Turn.deadline`` stays an absolute bound for what has a real one (a delegated job's
``ends_at``, or a turn an older ingress stamped): the stage's end is the earlier of both.

>>> from datetime import UTC, datetime, timedelta
>>> t0 = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)
>>> b = BudgetSection(admitted_at=t0, seconds=45, last_done_at=t0)
>>> end = begin(b, None, t0 + timedelta(minutes=10))  # ten minutes in a backlog
>>> (end - (t0 + timedelta(minutes=10))).total_seconds(), b.queued_ms
(45.0, 600000.0)
>>> spend(b, t0 + timedelta(minutes=10), t0 + timedelta(minutes=10, seconds=2)); b.spent_ms
2000.0
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict


class BudgetSection(BaseModel):
    """What the turn's budget has counted so far (``None`` fields: an envelope from before)."""

    model_config = ConfigDict(extra="forbid")

    admitted_at: datetime | None = None  # when the ingress admitted the turn
    seconds: float | None = None  # this step's processing budget; ``None``: no bound of work
    backlog_seconds: float | None = None  # a wait beyond this is a backlog the reply owns up to
    spent_ms: float = 0.0  # this step's work: its stages' run time
    queued_ms: float = 0.0  # the turn's waits: admission or a stage's end to the next stage's start
    last_done_at: datetime | None = None  # when the last stage finished (admission at first)

    @property
    def backlogged(self) -> bool:
        """The turn waited beyond its admitted backlog (its reply says so, the operator is alerted)."""
        return self.backlog_seconds is not None and self.queued_ms > self.backlog_seconds * 1000


def admit(now: datetime, *, seconds: float, backlog_seconds: float) -> BudgetSection:
    return BudgetSection(admitted_at=now, seconds=seconds, backlog_seconds=backlog_seconds, last_done_at=now)


def begin(budget: BudgetSection, deadline: datetime | None, now: datetime) -> datetime | None:
    """A stage starts working at ``now``: count the wait before it; when its budget runs out."""
    if budget.last_done_at is not None and now > budget.last_done_at:
        budget.queued_ms += (now - budget.last_done_at).total_seconds() * 1000
    budget.last_done_at = now  # a stage that dies leaves nothing: its redelivery counts from here
    ends = [] if deadline is None else [deadline]
    if budget.seconds is not None:
        ends.append(now + timedelta(seconds=budget.seconds) - timedelta(milliseconds=budget.spent_ms))
    return min(ends) if ends else None


def spend(budget: BudgetSection, started: datetime, now: datetime) -> None:
    """The stage that started at ``started`` finished at ``now``: its run time is work."""
    budget.spent_ms += max(0.0, (now - started).total_seconds() * 1000)
    budget.last_done_at = now


def new_step(budget: BudgetSection, seconds: float) -> None:
    """The loop hands the turn to its next step: a budget of ``seconds`` of work, none spent."""
    budget.seconds, budget.spent_ms = seconds, 0.0
