"""One real step of the stage table, run by the real runner on a stage of its own: what the table
says of a shadow or a job's turn, shown on the step's own effects (a test helper)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from shared_lib.turn.decisions import Outcome
from shared_lib.turn.stages import Stage
from shared_lib.wiring.stages import STAGES


def only(stage: str, step: str) -> Stage:
    """``stage`` with just ``step`` of the table (as declared there) around a core that does nothing."""
    table = STAGES[stage]
    found = [s for s in (*table.answers, *table.amends, *table.afters) if s.name == step]
    assert found, f"the table has no step {step} in {stage}"
    s = found[0]
    lists: dict[str, Any] = {"answers": (), "amends": (), "afters": ()}
    lists[{"answer": "answers", "amend": "amends", "after": "afters"}[s.kind]] = (s,)
    return Stage(stage, lambda turn, rt: Outcome("core"), shadow=table.shadow, **lists)


@dataclass(frozen=True)
class _Settings:
    days: int = 90

    def retention(self, org_id: str) -> timedelta:
        return timedelta(days=self.days)


@dataclass
class StoreRuntime:
    """What a store-writing step reads of the runtime: the store, the clock, the retention."""

    store: Any
    now: datetime
    settings: _Settings = field(default_factory=_Settings)

    def clock(self) -> datetime:
        return self.now
