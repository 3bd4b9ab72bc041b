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
from shared_lib.wiring.features import FEATURES
from shared_lib.wiring.stages import DECLARED, STAGES, placement_errors, render

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


def test_a_stage_that_takes_no_shadow_runs_nothing_of_it_on_one() -> None:
    trace = Trace()
    stage = Stage(
        "memory",
        trace.core,
        shadow=False,
        answers=(answer("debounce.absorbed", trace.answer("debounce.absorbed")),),
        amends=(amend("finetune.stage", trace.amend("finetune.stage"), effects=True),),
    )
    assert stage.run(a_turn(shadow=True), None).outcome == "skipped" and trace.ran == []
    stage.run(a_turn(), None)
    assert trace.ran == ["debounce.absorbed", "core", "finetune.stage"]


# What the table's steps do, by what they touch: a step that writes state, sends, publishes or
# records a job never runs on a shadow candidate; its dry-run twin runs on the shadow only.
WRITES = {
    "context": {"jobs.begin", "debounce.gather", "auto_approve.command", "history.words"},
    "brain": {"approvals.pending_answer"},
    "guardian": {"auto_approve.record"},
    "executor": {"jobs.publish_delegated"},
    "responder": {
        "loop.next_step",
        "jobs.next_step",
        "approvals.ask",
        "jobs.conclude",
        "persona.learn",
        "approvals.after_reply",
        "responder.send",
        "jobs.report",
        "history.reply",
        "agent_state.record",
    },
    "memory": {"memory_stories.episode", "finetune.stage"},
}
DRY_RUN = {"responder": {"shadow.next_step", "approvals.ask_dry", "persona.dry_run", "shadow.dry_run"}}


@pytest.mark.parametrize("name", STAGE_LAYERS)
def test_no_step_that_writes_runs_on_a_shadow_and_its_dry_run_runs_there_only(name: str) -> None:
    stage = STAGES[name]
    steps = {s.name: s for s in (*stage.answers, *stage.amends, *stage.afters)}
    shadow, person = a_turn(shadow=True), a_turn()
    for step in WRITES.get(name, set()):
        assert not (stage.shadow and steps[step].applies(shadow)), f"{name}: {step} would write on a dry run"
    for step in DRY_RUN.get(name, set()):
        assert steps[step].applies(shadow) and not steps[step].applies(person), step
    assert stage.shadow is (name not in ("context", "memory"))


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


# Where a turn's ``shadow`` or ``job`` may decide anything: the runner, the envelope (which says
# what a kind of turn means: ``brain_arm``, ``spends_extras``, ``job_id``, ``record_kind``), the
# shadow's own stage and comparison, and the composition root's table. Anywhere else a module reads
# what it needs (a parameter the table passes, a property of the envelope), never the turn's kind.
HOME = {
    "shared_lib/turn/stages.py",
    "shared_lib/turn/envelope.py",
    "shared_lib/layers/shadow.py",
    "shared_lib/rollout/comparison.py",
}


def _conditions(tree: ast.AST) -> list[ast.AST]:
    """The expressions a module branches on: tests of if/while/assert/conditional expressions and
    comprehensions, boolean operators, ``not`` and comparisons."""
    out: list[ast.AST] = []
    for n in ast.walk(tree):
        if isinstance(n, ast.If | ast.IfExp | ast.While | ast.Assert):
            out.append(n.test)
        elif isinstance(n, ast.comprehension):
            out.extend(n.ifs)
        elif isinstance(n, ast.BoolOp | ast.Compare) or (
            isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not)
        ):
            out.append(n)
        elif isinstance(n, ast.Match):
            out.append(n.subject)
    return out


def _kind_of_turn(n: ast.AST) -> bool:
    return (
        isinstance(n, ast.Attribute)
        and n.attr in ("shadow", "job")
        and isinstance(n.value, ast.Name)
        and n.value.id in ("turn", "candidate", "candidate_turn")
    )


def branches_on_shadow_or_job(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(_kind_of_turn(n) for c in _conditions(tree) for n in ast.walk(c))


def asks_shadow_or_job(path: Path) -> bool:
    """Reads a turn's ``shadow`` or ``job`` at all (a record's field included)."""
    return any(_kind_of_turn(n) for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))))


def test_the_branch_detector_sees_each_way_of_asking(tmp_path: Path) -> None:
    for source in (
        "if turn.shadow:\n    pass\n",
        "x = 1 if turn.job else 2\n",
        "assert turn.job is not None\n",
        "ok = a and not candidate.shadow\n",
        "xs = [y for y in ys if turn.shadow]\n",
    ):
        (f := tmp_path / "m.py").write_text(source, encoding="utf-8")
        assert branches_on_shadow_or_job(f), source
    (f := tmp_path / "m.py").write_text("record(shadow=turn.shadow, job_id=turn.job_id)\n", encoding="utf-8")
    assert not branches_on_shadow_or_job(f)  # a record says what the turn is; it decides nothing


def test_only_the_runner_and_the_table_ask_whether_a_turn_is_a_shadow_or_a_jobs() -> None:
    asking = {
        str(p.relative_to(REPO))
        for p in sorted((REPO / "shared_lib").rglob("*.py"))
        if branches_on_shadow_or_job(p)
    }
    assert asking - HOME == set(), (
        "these branch on turn.shadow / turn.job: make it a step, or ask the envelope"
    )
    for name in ("guardian", "authorizer", "responder"):  # the layers the table freed
        assert not asks_shadow_or_job(REPO / "shared_lib" / "layers" / f"{name}.py"), name


def test_every_step_a_feature_declares_is_placed_once_and_the_table_places_no_copy() -> None:
    # GIVEN the manifests' steps and the table
    declared = {s.name: s for f in FEATURES for s in f.steps}
    assert declared == DECLARED and placement_errors(STAGES, DECLARED) == []
    # WHEN a feature declares a step the table does not place, or the table places a copy of its own
    orphan = answer("approvals.reminder", Trace().answer("approvals.reminder"))
    copy = amend("approvals.ask", Trace().amend("approvals.ask"))
    stages = {**STAGES, "brain": Stage("brain", Trace().core, amends=(copy,))}
    problems = placement_errors(stages, {**DECLARED, orphan.name: orphan})
    # THEN both are reported (and the real table has neither: it is checked when it is built)
    assert "declared by a feature and placed nowhere: approvals.reminder" in problems
    assert "not the feature's own step: approvals.ask" in problems


def test_a_feature_declares_its_own_steps_by_its_own_name() -> None:
    for f in FEATURES:
        prefix = {"persona_learning": "persona"}.get(f.name, f.name)
        assert all(s.name.startswith(f"{prefix}.") for s in f.steps), f.name
