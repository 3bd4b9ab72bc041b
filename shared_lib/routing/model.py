"""What the router decides: the routes and the decision record (seed 002 §4.2, seed 003).

The decision crosses boundaries (a turn's record, logs, ``charter route --json``), so it is
a closed pydantic model: ``primary_route``, where it came from (``source``), how sure, why,
the input fragments that made it (``evidence``, at most two, already masked) and the
``flags`` a caller keeps or logs (``local_only`` to carry into the next input; what the
classifier said, if it was asked; a refusal).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field


class Route(StrEnum):
    """The six routing categories of seed 003 (ルーティングカテゴリ)."""

    CHAT = "CHAT"  # explanation, consultation, small talk, summaries, reviews
    PLAN = "PLAN"  # arrangements, specifications, task breakdown, direction
    ANALYZE = "ANALYZE"  # extraction, structuring, tagging, aggregation, trends
    OPS = "OPS"  # operating procedures, incidents, configuration checks, command guidance
    RESEARCH = "RESEARCH"  # investigation, sources, comparison, latest information
    CODE = "CODE"  # code generation/fixes, diffs, implementation (the only cloud route)


Source = Literal["command", "rules", "classifier", "fallback", "channel"]
Refusal = Literal["code_needs_cloud"]
Score = Annotated[float, Field(ge=0.0, le=1.0)]

# The code a persona phrases as "CODE needs the cloud: /cloud lifts /local" (seed 003 明示コマンド).
GUIDANCE_CODE_LOCAL_ONLY = "route.code_local_only"
MAX_EVIDENCE = 2


class RoutingFlags(BaseModel):
    """The state and the side facts of one decision.

    ``local_only`` is the state *after* this input (``/local`` sets it, ``/cloud`` clears it,
    otherwise the caller's): the caller keeps it for the conversation's next input.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    local_only: bool = False
    classifier_called: bool = False
    classifier_route: Route | None = None
    classifier_confidence: float | None = None
    classifier_error: str | None = None
    refused: Refusal | None = None
    # the channel fixed the route to CHAT (seed 002 §2.6): other routes only by the DELEGATE protocol
    forced: str | None = None


class RoutingDecision(BaseModel):
    """One input's route; ``confidence`` is 1.0 for a command or a rule, 0.0 for a fallback."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    primary_route: Route
    source: Source
    confidence: Score
    reason: str
    evidence: list[str] = Field(default_factory=list, max_length=MAX_EVIDENCE)
    rule_id: str | None = None
    commands: list[str] = Field(default_factory=list)  # the leading commands the input gave
    guidance: str | None = None  # a message code for the persona (a refusal's way out)
    flags: RoutingFlags = Field(default_factory=RoutingFlags)
