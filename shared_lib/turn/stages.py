"""Stages as tables of steps: the kinds of step a stage runs, and the one runner that orders them.

A stage (context, brain, guardian, authorizer, executor, responder) is a *core* (what the layer
itself does: gather context, propose, judge, authorize, execute, compose) and the steps features
add around it, in the order the stage table of the composition root declares
(``shared_lib.wiring.stages``), which the runtime carries (``rt.stages``). Three kinds:

* an **answer** step runs before the core; the first that answers (returns an ``Outcome``) ends
  the stage: nothing else of it runs, not the core, nor an amend or after step (``/auto off``, the
  kill switch, an answer to a pending confirmation, the loop's next step, a debounced message);
* an **amend** step runs after the core (or the answer) and adjusts the stage's decision on the
  turn: a ``Verdict``, a loop decision, the reply's text. It returns the stage's ``Outcome``
  unchanged, or the one that replaces it;
* an **after** step is an effect once the decision is made (send once, write the session, learn
  the persona); it returns nothing.

Shadow and delegated-job turns are properties of steps, decided here and nowhere else:

* a shadow turn (``turn.shadow``: the candidate brain's dry run) runs no *after* step, by
  construction, and no step that says ``effects=True`` (an answer or amend step that writes);
  a stage that says ``shadow=False`` (the context, the memory target) does not run on one at all;
* ``on_job`` says whether a step runs on a delegated job's turn (``turn.job``): ``"any"``,
  ``"never"`` (the person's conversation only) or ``"only"`` (the job's own boundary and report).

Cost: a step is a function call; the table is built once per process.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from shared_lib.turn.decisions import Outcome
from shared_lib.turn.envelope import Turn

# the runtime a step is given (``shared_lib.runtime.Runtime``: a floor above this one)
Runtime = Any

StepKind = Literal["answer", "amend", "after"]
OnJob = Literal["any", "never", "only"]

AnswerFn = Callable[[Turn, Runtime], Outcome | None]
AmendFn = Callable[[Turn, Runtime, Outcome], Outcome]
AfterFn = Callable[[Turn, Runtime, Outcome], None]
CoreFn = Callable[[Turn, Runtime], Outcome]


@dataclass(frozen=True)
class Step:
    """One feature's step of a stage: its name (``feature.step``), kind and when it runs."""

    name: str
    kind: StepKind
    run: Callable[..., object]
    on_job: OnJob = "any"
    effects: bool = False  # an answer or amend step that writes: never on a shadow turn
    shadow_only: bool = False  # what a dry run reports in place of the effects it skipped

    def __post_init__(self) -> None:
        if self.kind not in ("answer", "amend", "after"):
            raise ValueError(f"step {self.name}: unknown kind {self.kind!r}")
        if self.on_job not in ("any", "never", "only"):
            raise ValueError(f"step {self.name}: unknown on_job {self.on_job!r}")

    def applies(self, turn: Turn) -> bool:
        if turn.shadow and (self.kind == "after" or self.effects):
            return False
        if self.shadow_only and not turn.shadow:
            return False
        job = turn.job is not None
        return not ((self.on_job == "never" and job) or (self.on_job == "only" and not job))


def answer(
    name: str, run: AnswerFn, *, on_job: OnJob = "any", effects: bool = False, shadow_only: bool = False
) -> Step:
    return Step(name, "answer", run, on_job=on_job, effects=effects, shadow_only=shadow_only)


def amend(
    name: str, run: AmendFn, *, on_job: OnJob = "any", effects: bool = False, shadow_only: bool = False
) -> Step:
    return Step(name, "amend", run, on_job=on_job, effects=effects, shadow_only=shadow_only)


def after(name: str, run: AfterFn, *, on_job: OnJob = "any") -> Step:
    return Step(name, "after", run, on_job=on_job)


@dataclass(frozen=True)
class Stage:
    """A stage's core and its steps, each list in the order it runs."""

    name: str
    core: CoreFn
    shadow: bool = True  # False: a shadow candidate's dry run skips the whole stage
    answers: Sequence[Step] = field(default_factory=tuple)
    amends: Sequence[Step] = field(default_factory=tuple)
    afters: Sequence[Step] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        for kind, steps in (("answer", self.answers), ("amend", self.amends), ("after", self.afters)):
            for s in steps:
                if s.kind != kind:
                    raise ValueError(f"stage {self.name}: {s.name} is an {s.kind} step, listed as {kind}")
        names = [s.name for s in (*self.answers, *self.amends, *self.afters)]
        if len(names) != len(set(names)):
            raise ValueError(f"stage {self.name}: a step is listed twice")

    def run(self, turn: Turn, rt: Runtime) -> Outcome:
        """The stage over ``turn``: answer steps, else the core; then amends; then afters."""
        if turn.shadow and not self.shadow:
            return Outcome("skipped", reason_code="shadow.dry_run")
        for s in self.answers:
            if s.applies(turn) and (answered := s.run(turn, rt)) is not None:
                assert isinstance(answered, Outcome), f"answer step {s.name} returned {answered!r}"
                return answered
        outcome = self.core(turn, rt)
        for s in self.amends:
            if s.applies(turn):
                amended = s.run(turn, rt, outcome)
                assert isinstance(amended, Outcome), f"amend step {s.name} returned {amended!r}"
                outcome = amended
        for s in self.afters:
            if s.applies(turn):
                s.run(turn, rt, outcome)
        return outcome

    def rows(self) -> list[tuple[str, str, str, str]]:
        """(kind, step, on a job's turn, on a shadow turn) in running order, with the core."""
        out: list[tuple[str, str, str, str]] = [
            (s.kind, s.name, s.on_job, _shadow(s, self.shadow)) for s in self.answers
        ]
        out.append(("core", f"{self.name}.core", "any", "runs" if self.shadow else "skipped"))
        out += [(s.kind, s.name, s.on_job, _shadow(s, self.shadow)) for s in (*self.amends, *self.afters)]
        return out


def _shadow(s: Step, stage: bool = True) -> str:
    if not stage:
        return "skipped"
    if s.shadow_only:
        return "only"
    return "skipped" if s.kind == "after" or s.effects else "runs"
