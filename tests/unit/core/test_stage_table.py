"""The stage table: what the step kinds mean, that the document shows the table the code runs,
and that the layers leave jobs and shadow turns to it (docs/ARCHITECTURE.md, "The stage table")."""

from __future__ import annotations

import ast
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from shared_lib.turn.decisions import Outcome
from shared_lib.turn.envelope import JobSection, Turn
from shared_lib.turn.inbound import InboundMessage
from shared_lib.turn.stages import Stage, after, amend, answer
from shared_lib.wiring.stages import STAGES, render

REPO = Path(__file__).resolve().parents[3]
STAGE_LAYERS = ("context", "brain", "guardian", "authorizer", "executor", "responder", "memory")


def a_turn(*, shadow: bool = False, job: bool = False) -> Turn:
    msg = InboundMessage(
        channel="http",
        org_id="demo",
        room_id="room-general",
        user_id="u-suzuki",
        text="明日の朝イチで田中さんに見積書の件リマインドして〜🙏",
        message_id="m-1",
        event_id="e-1",
        received_at=datetime(2026, 11, 30, 22, 40, tzinfo=UTC),  # a Monday night
    )
    turn = Turn.from_inbound(msg)
    turn.shadow = shadow
    if job:
        turn.job = JobSection(job_id="job-1", parent_turn_id="t-0", max_steps=3)
    return turn


class Trace:
    """Records which steps ran, in order; each step's function is one of these."""

    def __init__(self) -> None:
        self.ran: list[str] = []

    def answer(self, name: str, says: Outcome | None = None) -> Any:
        def run(turn: Turn, rt: object) -> Outcome | None:
            self.ran.append(name)
            return says

        return run

    def core(self, turn: Turn, rt: object) -> Outcome:
        self.ran.append("core")
        return Outcome("composed", reason_code="reply")

    def amend(self, name: str) -> Any:
        def run(turn: Turn, rt: object, outcome: Outcome) -> Outcome:
            self.ran.append(name)
            return Outcome(
                outcome.outcome, reason_code=outcome.reason_code, detail=f"{outcome.detail}+{name}"
            )

        return run

    def after(self, name: str) -> Any:
        def run(turn: Turn, rt: object, outcome: Outcome) -> None:
            self.ran.append(name)

        return run


def a_stage(trace: Trace, *, answers: tuple[Any, ...] = ()) -> Stage:
    return Stage(
        "responder",
        trace.core,
        answers=answers,
        amends=(
            amend("approvals.ask", trace.amend("approvals.ask"), on_job="never"),
            amend("jobs.conclude", trace.amend("jobs.conclude"), on_job="only", effects=True),
            amend("shadow.dry_run", trace.amend("shadow.dry_run"), shadow_only=True),
        ),
        afters=(
            after("responder.send", trace.after("responder.send"), on_job="never"),
            after("jobs.report", trace.after("jobs.report"), on_job="only"),
            after("history.reply", trace.after("history.reply")),
        ),
    )


def test_a_persons_turn_runs_the_core_then_its_amends_then_its_effects_in_table_order() -> None:
    trace = Trace()
    outcome = a_stage(trace).run(a_turn(), None)
    assert trace.ran == ["core", "approvals.ask", "responder.send", "history.reply"]
    assert outcome.detail == "+approvals.ask"  # an amend step's outcome is the stage's


def test_the_first_answer_ends_the_stage_and_nothing_else_of_it_runs() -> None:
    trace = Trace()
    stage = a_stage(
        trace,
        answers=(
            answer("loop.next_step", trace.answer("loop.next_step")),  # does not answer
            answer("brain.kill_switch", trace.answer("brain.kill_switch", Outcome("kill_switch"))),
            answer("routing.answer", trace.answer("routing.answer", Outcome("routed"))),
        ),
    )
    assert stage.run(a_turn(), None).outcome == "kill_switch"
    assert trace.ran == ["loop.next_step", "brain.kill_switch"]


def test_a_shadow_turn_runs_no_after_step_and_no_effectful_step_but_its_dry_run() -> None:
    trace = Trace()
    stage = a_stage(
        trace,
        answers=(answer("approvals.pending_answer", trace.answer("pending", Outcome("x")), effects=True),),
    )
    stage.run(a_turn(shadow=True), None)
    assert trace.ran == ["core", "approvals.ask", "shadow.dry_run"]


def test_a_jobs_turn_runs_the_jobs_steps_and_not_the_persons() -> None:
    trace = Trace()
    a_stage(trace).run(a_turn(job=True), None)
    assert trace.ran == ["core", "jobs.conclude", "jobs.report", "history.reply"]


def test_a_step_listed_under_another_kind_or_twice_is_refused() -> None:
    trace = Trace()
    with pytest.raises(ValueError, match="after step"):
        Stage("x", trace.core, amends=(after("a.b", trace.after("a.b")),))
    with pytest.raises(ValueError, match="twice"):
        Stage("x", trace.core, afters=(after("a.b", trace.after("a.b")), after("a.b", trace.after("a.b"))))


def test_the_document_shows_the_table_the_code_runs() -> None:
    doc = (REPO / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    shown = doc.split("<!-- stage-table:begin -->\n", 1)[1].split("\n<!-- stage-table:end -->", 1)[0]
    assert shown == render(), (
        "docs/ARCHITECTURE.md: paste shared_lib.wiring.stages.render() between its markers"
    )


def test_every_turn_stage_runs_from_the_table() -> None:
    assert set(STAGES) == set(STAGE_LAYERS)
    for name in STAGE_LAYERS:
        source = (REPO / "shared_lib" / "layers" / f"{name}.py").read_text(encoding="utf-8")
        assert f'rt.stages["{name}"].run(turn, rt)' in source, name


# Modules still branching on a turn's ``shadow`` or ``job`` inside their own logic: a ratchet
# that only shrinks (a module that no longer does must leave the list). The runner, the envelope,
# the shadow's own stage and the composition root's table are where these questions belong.
HOME = {
    "shared_lib/turn/stages.py",
    "shared_lib/turn/envelope.py",
    "shared_lib/layers/shadow.py",
    "shared_lib/wiring/stages.py",
}
KNOWN = {
    "shared_lib/brain/integration.py",
    "shared_lib/brain/llm_arm.py",
    "shared_lib/brain/vault.py",
    "shared_lib/features/finetune/state/staging.py",
    "shared_lib/features/auto_approve/steps.py",
    "shared_lib/layers/base.py",
    "shared_lib/layers/brain.py",
    "shared_lib/features/approvals/steps.py",
    "shared_lib/layers/context.py",
    "shared_lib/layers/executor.py",
    "shared_lib/features/jobs/steps.py",
    "shared_lib/features/memory_stories/steps.py",
    "shared_lib/layers/observer.py",
    "shared_lib/loop/controller.py",
    "shared_lib/observability/records.py",
    "shared_lib/rollout/comparison.py",
    "shared_lib/features/agent_state/store.py",
    "shared_lib/features/persona_learning/store.py",
    "shared_lib/turn/callctx.py",
}


def asks_shadow_or_job(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(
        isinstance(n, ast.Attribute)
        and n.attr in ("shadow", "job")
        and isinstance(n.value, ast.Name)
        and n.value.id in ("turn", "candidate")
        for n in ast.walk(tree)
    )


def test_only_the_runner_and_the_table_ask_whether_a_turn_is_a_shadow_or_a_jobs() -> None:
    asking = {
        str(p.relative_to(REPO)) for p in sorted((REPO / "shared_lib").rglob("*.py")) if asks_shadow_or_job(p)
    }
    assert asking - HOME - KNOWN == set(), "a new module branches on turn.shadow / turn.job: make it a step"
    assert KNOWN - asking == set(), "these no longer ask: take them off KNOWN"
    for name in ("guardian", "authorizer", "responder"):  # the layers the table freed
        assert not asks_shadow_or_job(REPO / "shared_lib" / "layers" / f"{name}.py"), name
