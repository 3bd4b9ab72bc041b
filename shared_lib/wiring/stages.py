"""The stage table: which steps each stage of a turn runs, in which order (the only place that
orders them; ``shared_lib.turn.stages`` says what the kinds mean and runs them).

Each layer keeps its core (gather context, propose, judge, authorize, execute, compose). A
feature declares its steps in its manifest (``Manifest.steps``: name, kind, whether it runs on a
job's turn, whether it writes), with their functions in its room; this table places them by name,
beside the layers' own steps and the shadow's. A step a manifest declares and the table does not
place, or a name the table places that no manifest declares, fails at import. A delegated job's
turn and a shadow turn are not tested for in a layer: ``on_job`` and the step kinds say where they
go (a shadow turn runs no after step and no effectful answer or amend step, and no stage that
says ``shadow=False``). ``docs/ARCHITECTURE.md`` shows this table as rendered by ``render`` (a
test keeps the two equal).

Cost: the table is built once per process; a step is a function call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared_lib import loop
from shared_lib.errors import ConfigError
from shared_lib.layers import authorizer, brain, context, executor, guardian, memory, responder
from shared_lib.layers.base import Outcome
from shared_lib.turn.envelope import Turn
from shared_lib.turn.stages import Stage, Step, after, amend, answer
from shared_lib.wiring.features import steps

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime


# --- the shadow's own steps (a candidate's dry run) ----------------------------------------


def _next_step(turn: Turn, rt: Runtime) -> Outcome | None:
    """A shadow candidate's loop goes on only after a step whose tools are all reads (they ran
    for real: reads have no effect): the controller decides as for a served turn, within the same
    limits, and the shadow's worker thread runs the next step (``layers.shadow``: nothing is
    published). A step that proposed an effect (validated, never executed) or anything else
    ends the candidate's loop: recorded, and the reply composed as the served turn's would be."""
    if not shadow_reads_only(turn, rt):
        loop.stop(turn, loop.done(turn, "shadow"))
        return None
    s = rt.settings
    continued = responder.take_or_stop(
        turn, rt, loop.LoopLimits(max_loops=s.max_steps, max_millis=int(s.max_turn_seconds * 1000))
    )
    return (
        None if continued is None else Outcome("continue", reason_code=continued.reason_code, next_topic=None)
    )


def shadow_reads_only(turn: Turn, rt: Runtime) -> bool:
    """The step proposed tools, and every one of them is a read (no effect)."""
    p = turn.proposal.proposal
    calls = p.tool_calls if p is not None else []
    specs = [rt.registry.get(c.tool_name) for c in calls]
    return bool(specs) and all(spec is not None and spec.effect_kind == "read" for spec in specs)


def _dry_run(turn: Turn, rt: Runtime, outcome: Outcome) -> Outcome:
    """A shadow turn's reply is composed and recorded, never sent: the candidate's envelope goes
    nowhere from here (its persona proposals were recorded refused by ``persona.dry_run``)."""
    return Outcome("dry_run", reason_code=turn.response.kind, detail=turn.persona.note(), next_topic=None)


# --- the features' steps, by name -----------------------------------------------------------

DECLARED: dict[str, Step] = {s.name: s for s in steps()}


def feature(name: str) -> Step:
    """The step a feature's manifest declares under ``name``."""
    if name not in DECLARED:
        raise ConfigError(f"stage table: no feature declares the step {name!r}")
    return DECLARED[name]


def placement_errors(stages: dict[str, Stage], declared: dict[str, Step]) -> list[str]:
    """A declared step placed nowhere or twice, or a feature's name on a step of its own: what
    the table must never hold."""
    placed = [x for st in stages.values() for x in (*st.answers, *st.amends, *st.afters)]
    names = [x.name for x in placed if x.name in declared]
    errors = [f"declared by a feature and placed nowhere: {n}" for n in sorted(set(declared) - set(names))]
    errors += [f"placed twice: {n}" for n in sorted({n for n in names if names.count(n) > 1})]
    errors += [
        f"not the feature's own step: {x.name}"
        for x in placed
        if x.name in declared and x is not declared[x.name]
    ]
    return errors


# --- the table ------------------------------------------------------------------------------

STAGES: dict[str, Stage] = {
    s.name: s
    for s in (
        Stage(
            "context",
            context.core,
            shadow=False,  # the candidate starts from the served turn's context
            answers=(
                feature("jobs.begin"),
                feature("debounce.gather"),
                feature("auto_approve.command"),
            ),
            afters=(after("history.words", context.remember_words, on_job="never"),),
        ),
        Stage(
            "brain",
            brain.core,
            answers=(
                feature("auto_approve.answer"),
                answer("brain.kill_switch", brain.kill_switch),
                answer("routing.answer", brain.route_answer),
                feature("approvals.pending_answer"),
            ),
        ),
        Stage(
            "guardian",
            guardian.core,
            amends=(
                feature("jobs.no_nesting"),
                feature("auto_approve.apply"),
            ),
            afters=(feature("auto_approve.record"),),
        ),
        Stage(
            "authorizer",
            authorizer.core,
            amends=(feature("jobs.no_nesting_gate"),),
            afters=(after("authorizer.directory_alert", authorizer.directory_alert),),
        ),
        Stage(
            "executor",
            executor.core,
            answers=(feature("jobs.live"),),
            afters=(feature("jobs.publish_delegated"),),
        ),
        Stage(
            "responder",
            responder.core,
            answers=(
                answer("shadow.next_step", _next_step, shadow_only=True),
                answer("loop.next_step", responder.next_step, on_job="never", effects=True),
                feature("jobs.next_step"),
            ),
            amends=(
                feature("approvals.ask"),
                feature("approvals.ask_dry"),
                feature("jobs.started"),
                amend("responder.phrase", responder.phrase),
                amend("responder.finish_text", responder.finish_text),
                feature("jobs.conclude"),
                feature("persona.dry_run"),
                amend("shadow.dry_run", _dry_run, shadow_only=True),
                feature("persona.learn"),
            ),
            afters=(
                feature("approvals.after_reply"),
                after("responder.send", responder.send, on_job="never"),
                feature("jobs.report"),
                after("history.reply", responder.remember_reply),
                feature("agent_state.record"),
            ),
        ),
        Stage(
            "memory",
            memory.core,
            shadow=False,  # a dry run's conversation is not the person's: it keeps nothing
            answers=(answer("debounce.absorbed", memory.absorbed),),
            amends=(
                feature("memory_stories.episode"),
                feature("finetune.stage"),
            ),
        ),
    )
}


if problems := placement_errors(STAGES, DECLARED):
    raise ConfigError("stage table: " + "; ".join(problems))


def render(stages: dict[str, Stage] | None = None) -> str:
    """The table as Markdown (``docs/ARCHITECTURE.md`` holds it, between its markers)."""
    lines = [
        "| stage | # | kind | step | on a job's turn | on a shadow turn |",
        "|---|---|---|---|---|---|",
    ]
    for name, stage in (stages or STAGES).items():
        for i, (kind, step, on_job, shadow) in enumerate(stage.rows(), 1):
            lines.append(f"| {name if i == 1 else ''} | {i} | {kind} | `{step}` | {on_job} | {shadow} |")
    return "\n".join(lines)
