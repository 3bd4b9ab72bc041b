"""The promotion ladder, as data, and the flags file of each environment.

Every environment has its own flags file, ``terraform/flags/{env}.json`` (one schema,
``FlagsDocument``); Terraform writes the environment's file to its ``config/flags``. A file
stands on one stage of the ladder (seed 000 §12.2 C-3…C-6, ``docs/ROLLOUT.md``):

===========  ============  ===============  ===================================  ==========
stage        brain_mode    canary_percent   who gets the LLM arm                 gate [1]
===========  ============  ===============  ===================================  ==========
legacy       legacy        0                nobody                               none
shadow       shadow        0                nobody; it runs as a dry candidate   none
canary-10    canary        10               buckets below 10                     shadow
canary-50    canary        50               buckets below 50                     canary
llm          llm           0                everyone                             canary
===========  ============  ===============  ===================================  ==========

[1] what a promotion *to* the stage must pass first (``shared_lib.rollout.gates``): the
shadow gate reads the shadow comparisons, the canary gate the LLM arm's records against
the legacy arm's. Reaching shadow needs no gate: nobody is served by the LLM arm there.

Environments are promoted in order, dev → stg → prod: no environment stands above the one
before it, and a promotion moves one stage at a time. A step down (a rollback in the file)
may skip stages, but may not leave the environment below one that comes after it.
Promotion is a reviewed change to the file (``charter flags promote``), never a side effect
of a deploy.

>>> stage_named("canary-10").canary_percent
10.0
>>> bump_version("2026-11-22.1", date(2026, 11, 22)), bump_version("2026-11-22.3", date(2026, 12, 1))
('2026-11-22.2', '2026-12-01.1')
"""

from __future__ import annotations

import json
import re
from datetime import date
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from shared_lib.errors import ArgumentError, CharterError
from shared_lib.flags.document import BrainMode, FlagsDocument, parse_flags_text

GateName = Literal["shadow", "canary"]
ENVIRONMENTS = ("dev", "stg", "prod")  # promotion order
FLAGS_DIR = Path(__file__).resolve().parents[2] / "terraform" / "flags"


class Stage(BaseModel):
    """One rung of the ladder: the global mode and percentage a flags file sets."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    brain_mode: BrainMode
    canary_percent: float
    gate: GateName | None

    @property
    def rank(self) -> int:
        return LADDER.index(self)

    def describe(self) -> str:
        percent = f" {self.canary_percent:g} %" if self.brain_mode == "canary" else ""
        return f"{self.name} (brain_mode {self.brain_mode}{percent})"


LADDER: tuple[Stage, ...] = (
    Stage(name="legacy", brain_mode="legacy", canary_percent=0, gate=None),
    Stage(name="shadow", brain_mode="shadow", canary_percent=0, gate=None),
    Stage(name="canary-10", brain_mode="canary", canary_percent=10, gate="shadow"),
    Stage(name="canary-50", brain_mode="canary", canary_percent=50, gate="canary"),
    Stage(name="llm", brain_mode="llm", canary_percent=0, gate="canary"),
)
STAGE_NAMES = tuple(s.name for s in LADDER)


class RefusedStep(CharterError):
    """A move on the ladder that is not allowed; the message is the one-line reason."""


def env_flags_file(env: str, directory: Path = FLAGS_DIR) -> Path:
    """``terraform/flags/{env}.json``; ``ArgumentError`` for an unknown environment."""
    if env not in ENVIRONMENTS:
        raise ArgumentError(f"unknown environment {env!r} (one of {', '.join(ENVIRONMENTS)})")
    return directory / f"{env}.json"


def stage_of(doc: FlagsDocument) -> Stage | None:
    """The stage the document stands on; None when it is off the ladder (e.g. canary 25 %)."""
    return next(
        (s for s in LADDER if s.brain_mode == doc.brain_mode and s.canary_percent == doc.canary_percent),
        None,
    )


def stage_named(name: str) -> Stage:
    for stage in LADDER:
        if stage.name == name:
            return stage
    raise ArgumentError(f"unknown stage {name!r} (one of {', '.join(STAGE_NAMES)})")


def off_ladder(env: str, doc: FlagsDocument) -> str:
    return (
        f"{env} is off the ladder (brain_mode {doc.brain_mode}, canary_percent {doc.canary_percent:g}): "
        f"the stages are {', '.join(STAGE_NAMES)}"
    )


def ladder_findings(docs: dict[str, FlagsDocument]) -> list[str]:
    """What is wrong with the environments' files as a whole: a missing or off-ladder file, or an
    environment serving the LLM arm to more people than the one before it (dev ≥ stg ≥ prod)."""
    findings = []
    previous: tuple[str, Stage] | None = None
    for env in ENVIRONMENTS:
        doc = docs.get(env)
        if doc is None:
            findings.append(f"{env}: no flags file")
            continue
        stage = stage_of(doc)
        if stage is None:
            findings.append(off_ladder(env, doc))
            continue
        if previous is not None and stage.rank > previous[1].rank:
            findings.append(f"{env} is at {stage.name}, past {previous[0]} ({previous[1].name})")
        previous = (env, stage)
    return findings


def plan_move(
    env: str,
    current: FlagsDocument,
    target_name: str | None,
    neighbours: dict[str, FlagsDocument],
) -> tuple[Stage, Stage]:
    """(from, to) for moving ``env`` to ``target_name`` (default: the next stage).

    ``neighbours`` holds the other environments' committed documents. ``RefusedStep`` with
    a one-line reason when the move skips a stage, passes the environment before, leaves
    the environment after ahead, starts off the ladder, or goes nowhere.
    """
    here = stage_of(current)
    if here is None:
        raise RefusedStep(off_ladder(env, current))
    if target_name is None:
        if here.rank == len(LADDER) - 1:
            raise RefusedStep(f"{env} is already at {here.name}, the last stage")
        target = LADDER[here.rank + 1]
    else:
        target = stage_named(target_name)
    if target == here:
        raise RefusedStep(f"{env} is already at {here.name}")
    if target.rank > here.rank + 1:
        skipped = ", ".join(s.name for s in LADDER[here.rank + 1 : target.rank])
        raise RefusedStep(f"{env}: {here.name} -> {target.name} skips {skipped} (one stage at a time)")
    position = ENVIRONMENTS.index(env)
    if target.rank > here.rank and position > 0:
        before = ENVIRONMENTS[position - 1]
        limit = _neighbour_stage(before, neighbours)
        if target.rank > limit.rank:
            raise RefusedStep(
                f"{env} -> {target.name} would pass {before} ({limit.name}): promote {before} first"
            )
    if target.rank < here.rank and position < len(ENVIRONMENTS) - 1:
        after = ENVIRONMENTS[position + 1]
        limit = _neighbour_stage(after, neighbours)
        if target.rank < limit.rank:
            raise RefusedStep(
                f"{env} -> {target.name} would leave {after} ({limit.name}) ahead of it: move {after} down first"
            )
    return here, target


def _neighbour_stage(env: str, neighbours: dict[str, FlagsDocument]) -> Stage:
    doc = neighbours.get(env)
    if doc is None:
        raise RefusedStep(f"no committed flags file for {env}: the ladder needs every environment's file")
    stage = stage_of(doc)
    if stage is None:
        raise RefusedStep(off_ladder(env, doc))
    return stage


_VERSION = re.compile(r"^(\d{4}-\d{2}-\d{2})\.(\d+)$")


def bump_version(version: str, today: date) -> str:
    """``YYYY-MM-DD.N``: the next N on the same day, else today's ``.1``."""
    m = _VERSION.match(version)
    if m and m.group(1) == today.isoformat():
        return f"{m.group(1)}.{int(m.group(2)) + 1}"
    return f"{today.isoformat()}.1"


def moved_text(text: str, target: Stage, today: date, *, source: str = "flags") -> str:
    """The flags file ``text`` at ``target``: mode, percentage and a new version; the rest kept.

    The output is the canonical form of the committed files (two-space JSON, keys in their
    order, a final newline), so a move changes exactly those three lines.
    """
    parse_flags_text(text, source=source)  # never rewrite a file the schema rejects
    data = json.loads(text)
    data["version"] = bump_version(str(data["version"]), today)
    data["brain_mode"] = target.brain_mode
    data["canary_percent"] = int(target.canary_percent)
    out = json.dumps(data, ensure_ascii=False, indent=2) + "\n"
    parse_flags_text(out, source=source)
    return out
