"""The stage table: which steps each stage of a turn runs, in which order (the only place that
orders them; ``shared_lib.turn.stages`` says what the kinds mean and runs them).

Each layer keeps its core (gather context, propose, judge, authorize, execute, compose); a
feature adds steps to the stages it takes part in, here. The adapters below only fit a feature's
function to a step's signature; the feature's rule stays in its own module. A delegated job's turn
and a shadow turn are not tested for in a layer: ``on_job`` and the step kinds say where they go
(a shadow turn runs no after step and no effectful answer or amend step). ``docs/ARCHITECTURE.md``
shows this table as rendered by ``render`` (a test keeps the two equal).

Cost: the table is built once per process; a step is a function call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared_lib import loop
from shared_lib.brain.persona_prompt import context_for
from shared_lib.errors import LLMError
from shared_lib.features.agent_state.store import record_turn
from shared_lib.features.approvals import steps as confirmation
from shared_lib.features.auto_approve import steps as auto_approval
from shared_lib.features.debounce import steps as debounce
from shared_lib.features.finetune.state import staging
from shared_lib.features.jobs import state as agent_jobs
from shared_lib.features.jobs import steps as job_turns
from shared_lib.features.memory_stories import steps as stories
from shared_lib.features.persona_learning.store import apply_turn
from shared_lib.layers import authorizer, brain, context, executor, guardian, memory, responder
from shared_lib.layers.base import Outcome
from shared_lib.observability.logs import log_event
from shared_lib.turn.callctx import job_context
from shared_lib.turn.decisions import AuthDecision, Verdict
from shared_lib.turn.envelope import Turn
from shared_lib.turn.proposal import ToolCallProposal
from shared_lib.turn.stages import Stage, after, amend, answer

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime


# --- approvals (confirmations) -------------------------------------------------------------


def _pending_answer(turn: Turn, rt: Runtime) -> Outcome | None:
    """A message that answers a pending confirmation is answered from state (seed 000 §5.1.7)."""
    if not confirmation.handle_pending_answer(turn, rt):
        return None
    return Outcome("pending_answer", reason_code=f"approval.{'set' if turn.proposal.approval else 'none'}")


def _ask(turn: Turn, rt: Runtime, outcome: Outcome, *, write: bool = True) -> Outcome:
    """A confirm verdict: the question, and the pending action written."""
    root = turn.proposal.proposal.root if turn.proposal.proposal else None
    if turn.response.kind == "confirm" and isinstance(root, ToolCallProposal):
        turn.response.text = confirmation.ask_confirmation(turn, rt, root, write=write)
    return outcome


def _ask_dry(turn: Turn, rt: Runtime, outcome: Outcome) -> Outcome:
    """A dry run's question: composed as the served turn's would be, stored nowhere."""
    return _ask(turn, rt, outcome, write=False)


def _after_reply(turn: Turn, rt: Runtime, outcome: Outcome) -> None:
    confirmation.after_reply(turn, rt)


# --- auto-approve -------------------------------------------------------------------------


def _auto_command(turn: Turn, rt: Runtime) -> Outcome | None:
    """The instant OFF (or ON) is written before anything else reads the grants (seed 002 §6.4)."""
    auto_approval.chat_command(turn, rt)
    return None


def _auto_apply(turn: Turn, rt: Runtime, outcome: Outcome) -> Outcome:
    """A confirm verdict a live auto-approve grant covers runs without asking."""
    if turn.guardian is None or turn.guardian.action != "confirm":
        return outcome
    turn.guardian = auto_approval.apply(turn, rt, turn.guardian)
    return guardian.verdict_outcome(turn.guardian)


def _auto_record(turn: Turn, rt: Runtime, outcome: Outcome) -> None:
    auto_approval.record(turn, rt)


# --- delegated jobs (sub-agents) ------------------------------------------------------------

# A job's loop runs within its own deadline (``ends_at``, the watchdog), not a person's turn budget.
JOB_MAX_MILLIS = agent_jobs.load_limits().max_seconds * 1000


def _delegates(turn: Turn) -> bool:
    p = turn.proposal.proposal
    return p is not None and agent_jobs.delegates(c.tool_name for c in p.tool_calls)


def _no_nested_verdict(turn: Turn, rt: Runtime, outcome: Outcome) -> Outcome:
    """A job's turn may never delegate again (depth 1); a constitution block stays first."""
    g = turn.guardian
    if g is None or not _delegates(turn) or (g.blocked and g.reason_code.startswith("constitution.")):
        return outcome
    turn.guardian = Verdict.block(
        agent_jobs.NESTED, priority=1, message="任された仕事からさらに任せることはできません"
    )
    return guardian.verdict_outcome(turn.guardian)


def _no_nested_gate(turn: Turn, rt: Runtime, outcome: Outcome) -> Outcome:
    """The gate denies a job's turn that delegates, whatever the guardian said."""
    if not _delegates(turn) or (turn.guardian is not None and turn.guardian.blocked):
        return outcome
    turn.authorization = AuthDecision.denied(agent_jobs.NESTED, message="deny")
    return Outcome("denied", reason_code=agent_jobs.NESTED)


def _job_live(turn: Turn, rt: Runtime) -> Outcome | None:
    """A job cancelled or timed out between its steps runs no effect."""
    if agent_jobs.is_running(rt.store, turn.org_id, turn.delegated().job_id):
        return None
    return executor.skipped(turn, "job.not_running")


def _publish_delegated(turn: Turn, rt: Runtime, outcome: Outcome) -> None:
    job_turns.publish_delegated(turn, rt)


def _job_loop(turn: Turn, rt: Runtime) -> Outcome | None:
    """A job's step: its own step limit and deadline, the watchdog at every step."""
    limits = loop.LoopLimits(max_loops=turn.delegated().max_steps, max_millis=JOB_MAX_MILLIS)
    return responder.take_or_stop(turn, rt, limits, boundary=job_turns.boundary)


def _job_started(turn: Turn, rt: Runtime, outcome: Outcome) -> Outcome:
    """The parent's reply when its step delegated a job: started, and where the report comes."""
    if turn.response.kind == "reply" and not turn.response.text:
        turn.response.text = job_turns.started_reply(turn, rt) or ""
    return outcome


def _job_conclude(turn: Turn, rt: Runtime, outcome: Outcome) -> Outcome:
    """The job's end: its status recorded; the reply becomes the report for the parent's room."""
    res = turn.response
    kind, res.text, status = job_turns.conclude(turn, rt, res.kind, res.text)
    res.kind = kind  # type: ignore[assignment]
    return Outcome("sent", reason_code=f"job.{status or 'unknown'}", detail=f"{len(res.text)} chars")


def _job_report(turn: Turn, rt: Runtime, outcome: Outcome) -> None:
    """The report, once, into the parent's room (the job read once more: the after step's own)."""
    job = agent_jobs.get(rt.store, turn.org_id, turn.delegated().job_id) or {}
    turn.response.sent = job_turns.report_once(rt, job, turn.response.text) if job else False


# --- agent state and persona learning -------------------------------------------------------


def _agent_state(turn: Turn, rt: Runtime, outcome: Outcome) -> None:
    """Seed 004: the conversation's agent state after this utterance, applied once."""
    turn.agent = record_turn(rt.store, turn, now=rt.clock(), retention=rt.settings.retention(turn.org_id))


def _persona_section(turn: Turn, rt: Runtime, *, dry_run: bool = False) -> None:
    section = apply_turn(rt.store, turn, rt.persona.core(), now=rt.clock(), dry_run=dry_run)
    section.context = context_for(turn, rt.registry)
    turn.persona = section


def _persona_learn(turn: Turn, rt: Runtime, outcome: Outcome) -> Outcome:
    """Seed 001 §16: what the LLM proposed to teach the organisation's persona, judged and applied once."""
    _persona_section(turn, rt)
    detail = " ".join(x for x in (outcome.detail, turn.persona.note()) if x)
    return Outcome(
        outcome.outcome, reason_code=outcome.reason_code, next_topic=outcome.next_topic, detail=detail
    )


def _one_step(turn: Turn, rt: Runtime) -> Outcome | None:
    """A shadow candidate's loop stops after its step (it never takes another): recorded, and
    the reply composed as the served turn's would be."""
    loop.stop(turn, loop.done(turn, "shadow"))
    return None


def _dry_run(turn: Turn, rt: Runtime, outcome: Outcome) -> Outcome:
    """A shadow turn's reply is composed and recorded, never sent: its persona proposals are
    recorded refused, and the candidate's envelope goes nowhere from here."""
    _persona_section(turn, rt, dry_run=True)
    return Outcome("dry_run", reason_code=turn.response.kind, detail=turn.persona.note(), next_topic=None)


# --- the memory target: episodes and fine-tuning staging -------------------------------------


def _episode(turn: Turn, rt: Runtime, outcome: Outcome) -> Outcome:
    """Seed 001 §22: an event episode of the turn when it deserves one."""
    with job_context(
        turn.org_id, "memory", conversation_key=turn.conversation_key, local_only=turn.route.local_only
    ):
        try:
            told = stories.on_turn_episode(rt, turn)
            episode: str = told.status if told is not None else "none"
        except LLMError as exc:  # the model refused or failed: this turn keeps no episode
            log_event(
                "episode_failed", layer="memory", org_id=turn.org_id, error=f"{type(exc).__name__}: {exc}"
            )
            episode = "llm_failed"
    return memory.with_result(outcome, f"episode_{episode}")


def _stage_ft(turn: Turn, rt: Runtime, outcome: Outcome) -> Outcome:
    """Seed 001 §29.3: the turn staged as fine-tuning data when the fixed rules say so."""
    staged = staging.stage(
        rt.store, turn, now=rt.clock(), retention=rt.settings.retention(turn.org_id)
    ).result
    return memory.with_result(outcome, f"ft_{staged}")


# --- the table ------------------------------------------------------------------------------

STAGES: dict[str, Stage] = {
    s.name: s
    for s in (
        Stage(
            "context",
            context.core,
            shadow=False,  # the candidate starts from the served turn's context
            answers=(
                answer("jobs.begin", job_turns.begin, on_job="only", effects=True),
                answer("debounce.gather", debounce.gather, on_job="never", effects=True),
                answer("auto_approve.command", _auto_command, on_job="never", effects=True),
            ),
            afters=(after("history.words", context.remember_words, on_job="never"),),
        ),
        Stage(
            "brain",
            brain.core,
            answers=(
                answer("auto_approve.answer", auto_approval.answer_command),
                answer("brain.kill_switch", brain.kill_switch),
                answer("routing.answer", brain.route_answer),
                answer("approvals.pending_answer", _pending_answer, effects=True),
            ),
        ),
        Stage(
            "guardian",
            guardian.core,
            amends=(
                amend("jobs.no_nesting", _no_nested_verdict, on_job="only"),
                amend("auto_approve.apply", _auto_apply),
            ),
            afters=(after("auto_approve.record", _auto_record),),
        ),
        Stage(
            "authorizer",
            authorizer.core,
            amends=(amend("jobs.no_nesting_gate", _no_nested_gate, on_job="only"),),
            afters=(after("authorizer.directory_alert", authorizer.directory_alert),),
        ),
        Stage(
            "executor",
            executor.core,
            answers=(answer("jobs.live", _job_live, on_job="only"),),
            afters=(after("jobs.publish_delegated", _publish_delegated),),
        ),
        Stage(
            "responder",
            responder.core,
            answers=(
                answer("shadow.one_step", _one_step, shadow_only=True),
                answer("loop.next_step", responder.next_step, on_job="never", effects=True),
                answer("jobs.next_step", _job_loop, on_job="only", effects=True),
            ),
            amends=(
                amend("approvals.ask", _ask, on_job="never", effects=True),
                amend("approvals.ask_dry", _ask_dry, on_job="never", shadow_only=True),
                amend("jobs.started", _job_started),
                amend("responder.phrase", responder.phrase),
                amend("responder.finish_text", responder.finish_text),
                amend("jobs.conclude", _job_conclude, on_job="only", effects=True),
                amend("shadow.dry_run", _dry_run, shadow_only=True),
                amend("persona.learn", _persona_learn, on_job="never", effects=True),
            ),
            afters=(
                after("approvals.after_reply", _after_reply, on_job="never"),
                after("responder.send", responder.send, on_job="never"),
                after("jobs.report", _job_report, on_job="only"),
                after("history.reply", responder.remember_reply),
                after("agent_state.record", _agent_state, on_job="never"),
            ),
        ),
        Stage(
            "memory",
            memory.core,
            shadow=False,  # a dry run's conversation is not the person's: it keeps nothing
            answers=(answer("debounce.absorbed", memory.absorbed),),
            amends=(
                amend("memory_stories.episode", _episode, effects=True),
                amend("finetune.stage", _stage_ft, on_job="never", effects=True),
            ),
        ),
    )
}


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
