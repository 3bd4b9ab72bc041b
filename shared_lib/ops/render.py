"""Terminal renderings of the operator views (the dashboard shows the same data)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from shared_lib.observability.records import ObservabilityRecord
from shared_lib.ops.audit import AuditReport
from shared_lib.ops.cost import CostReport
from shared_lib.ops.metrics import WindowStats
from shared_lib.ops.replay import ReplayReport
from shared_lib.rollout.report import plain


def to_json(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, indent=2, default=_default)


def _default(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else str(value)


def _short(text: str | None, width: int) -> str:
    flat = " ".join(str(text or "").split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.1%}"


def turns_table(records: list[ObservabilityRecord]) -> str:
    head = (
        f"{'time (UTC)':<19}  {'turn':<26}  {'org':<10} {'arm':<11} {'reply':<8} {'guardian':<8} "
        f"{'auth':<14} {'conf':>4} {'ms':>7} {'USD':>8}  input"
    )
    lines = [head, "-" * len(head)]
    for r in records:
        lines.append(
            f"{r.timestamp:%Y-%m-%d %H:%M:%S}  {r.record_id:<26}  {_short(r.organization_id, 10):<10} "
            f"{r.arm:<11} {r.response_kind:<8} {r.guardian_action:<8} {r.auth_result:<14} "
            f"{r.llm_confidence:>4.2f} {r.total_duration_ms:>7.0f} {r.cost_usd:>8.5f}  "
            f"{_short(r.input_message, 40)}"
        )
    lines.append(f"{len(records)} turn(s)")
    return "\n".join(lines)


def trail(
    r: ObservabilityRecord,
    *,
    llm_calls: list[dict[str, Any]] | None = None,
    comparison: dict[str, Any] | None = None,
    evaluations: list[dict[str, Any]] | None = None,
) -> str:
    """The whole decision trail of one turn, layer by layer."""
    what = "shadow candidate (dry run)" if r.shadow else "turn"
    out = [
        f"{what} {r.record_id}  org {r.organization_id}  user {r.user_id}  room {r.room_id}  via {r.channel}",
        f"  received {r.timestamp.isoformat()}  steps {r.step_count}  trace {r.trace_id or '-'}",
        f"  input      {r.input_message}",
        *([f"  job        {r.job_id}  delegated by turn {r.parent_turn_id or '-'}"] if r.job_id else []),
        f"  context    {_short(r.context_summary, 160) or '-'}"
        + (f"  (degraded: {', '.join(r.context_degraded)})" if r.context_degraded else ""),
        f"  flags      arm {r.flags_arm} ({r.flags_reason}), flags {r.flags_version or '-'}, bucket {plain(r.bucket)}"
        + ("  KILL SWITCH" if r.kill_switch else ""),
        _route_line(r),
        "",
        "  trail:",
    ]
    for i, e in enumerate(r.trail, 1):
        out.append(
            f"   {i:>2}. {e.layer:<14} {e.outcome:<16} {e.reason_code or '':<30} {e.duration_ms:>9.2f} ms"
            + (f"  {e.detail}" if e.detail else "")
        )
    out += [
        "",
        f"  proposal   {r.output_type or '-'} by {r.arm} ({r.llm_model}), confidence {r.llm_confidence:.2f}, "
        f"attempts {r.proposal_attempts}",
        f"  reasoning  {r.llm_reasoning or '-'}",
    ]
    for t in r.selected_tools:
        out.append(f"  tool       {t.tool_name} {json.dumps(t.parameters, ensure_ascii=False)}")
    for v in r.constitution_violations:
        out.append(f"  VIOLATION  {v.article} {v.code} ({v.action}): {v.detail}")
    out += [
        f"  guardian   {r.guardian_action} ({r.guardian_reason or '-'}, priority {r.guardian_priority})",
        f"  authorize  {r.auth_result} ({r.auth_reason or '-'}, level {r.auth_user_level} / needs "
        f"{r.auth_required_level})",
    ]
    if r.execution_result:
        for res in r.execution_result:
            state = "ok" if res.get("ok") else f"error {res.get('error_code')}"
            out.append(
                f"  executed   {res.get('tool_name')} {state}"
                + (" (dry run)" if res.get("dry_run") else "")
                + (f" receipt {res.get('receipt_id')}" if res.get("receipt_id") else "")
            )
    else:
        out.append(f"  executed   nothing ({r.execution_skipped_reason or '-'})")
    out += [
        f"  reply      {r.response_kind}{' (sent)' if r.response_sent else ''}: {r.final_response}",
        f"  time       total {r.total_duration_ms:.1f} ms, LLM {r.llm_duration_ms:.1f} ms, "
        f"tools {r.tool_duration_ms:.1f} ms",
        f"  usage      {r.usage.llm_calls} LLM call(s), in {r.usage.input_tokens} out {r.usage.output_tokens} "
        f"cache read {r.usage.cache_read_input_tokens} write {r.usage.cache_creation_input_tokens} "
        f"(hit {_pct(r.cache_hit_ratio)}), {r.cost_usd:.6f} USD",
    ]
    out += _steps_lines(r)
    out += _agent_lines(r)
    if r.self_critique_executed:
        out.append(f"  critique   {r.self_critique_result}")
    for ev in evaluations or []:
        out += best_of_n_lines(ev)
    for err in r.errors:
        out.append(f"  ERROR      {err.code} [{err.severity}] in {err.layer}: {err.message}")
    for c in llm_calls or []:
        out.append(
            f"  llm call   {c.get('call_type')} {c.get('model')} {c.get('status')} "
            f"{float(c.get('latency_ms') or 0):.0f} ms, {c.get('total_tokens')} tokens"
            + (f" — {c.get('error')}" if c.get("error") else "")
        )
    if comparison:
        verdict = (
            "agree"
            if comparison.get("all_agree")
            else f"differ on {', '.join(comparison.get('mismatches', []))}"
        )
        out.append(f"  shadow     {comparison.get('candidate_arm')} candidate: {verdict}")
    return "\n".join(out)


def _num(value: Any, spec: str = ".2f") -> str:
    return "-" if value is None else format(float(value), spec)


def best_of_n_lines(ev: dict[str, Any]) -> list[str]:
    """One Best-of-N run (``features.best_of_n``): N, the candidates' variety, the judge's picks."""
    what = "text answer" if ev.get("kind") == "text_answer" else "tool results"
    v = ev.get("variety") or {}
    est, cost = ev.get("estimated_cost_usd"), ev.get("cost_usd")
    ratio = f" ({float(est) / float(cost):.2f}x)" if est and cost else ""
    out = [
        f"  best-of-n  step {ev.get('step', 0)} {what}: difficulty {ev.get('difficulty')}, "
        f"N {ev.get('n')} of {ev.get('planned_n')} planned, {ev.get('answered')} answered, judge {ev.get('judge')}",
        f"  variety    {v.get('distinct_texts', '-')} distinct of {ev.get('answered')}, distinct pairs "
        f"{_num(v.get('distinct_pair_ratio'))}, edit distance mean {_num(v.get('mean_edit_distance'))} "
        f"min {_num(v.get('min_edit_distance'))}",
        f"  picked     candidate {ev.get('chosen') if ev.get('chosen') is not None else 'none (templates)'}"
        f" score {_num(ev.get('chosen_score'))}, spread {_num(ev.get('spread'))}, judge spread "
        f"{_num(ev.get('judge_spread'))}, regenerated {'yes' if ev.get('regenerated') else 'no'}, "
        f"refined {'yes' if ev.get('refined') else 'no'}",
        f"  bon cost   estimated {_num(est, '.6f')} USD, billed {_num(cost, '.6f')} USD{ratio}",
    ]
    for row in ev.get("scores") or []:
        out.append(
            f"   {'*' if row.get('chosen') else ' '} #{row.get('index')} t={_num(row.get('temperature'), '.1f')} "
            f"total {_num(row.get('total'))} judge {_num(row.get('judge'))} length {_num(row.get('length'))} "
            f"consistency {_num(row.get('consistency'))} persona {_num(row.get('persona'))} "
            f"rules {_num(row.get('rules'))} {row.get('chars', '-')} chars"
            + (f" [{', '.join(row['violations'])}]" if row.get("violations") else "")
        )
    return out


def _agent_lines(r: ObservabilityRecord) -> list[str]:
    """Seed 004: the agent state after the turn, the transition taken and the refused ones."""
    a = r.agent
    if not a.step:  # a record of an earlier version, or a turn that read no state
        return []
    out = [
        f"  agent      {a.step} / {a.status}{'  approval pending' if a.pending_gate else ''}"
        f"{'' if a.applied else '  (not written)'}",
        f"  goal       {a.goal or '-'}" + (f"  (why now: {a.why_now})" if a.why_now else ""),
    ]
    for label, items in (
        ("plan", a.plan_brief),
        ("constraint", a.constraints),
        ("question", a.open_questions),
    ):
        out += [f"  {label:<10} {item}" for item in items]
    for t in a.transition:
        out.append(f"  transition {t.from_step} -> {t.to_step} by {t.by} ({t.reason or '-'})")
    for t in a.refused:
        out.append(f"  refused    {t.from_step} -> {t.to_step} by {t.by}: {t.reason}")
    return out


def _steps_lines(r: ObservabilityRecord) -> list[str]:
    """The loop of the turn (seed 002 §3): one line per step, the stop, the §7.1 events."""
    out = ["  steps:"] if r.steps else []
    for s in r.steps:
        done = "-" if not s.results else ("ok" if s.ok else f"failed {s.error_code or '-'}")
        out.append(
            f"   step {s.step}  {', '.join(s.tools) or s.output_type or '-'}  {s.verdict}/{s.authorization}  "
            f"{done}  next={'yes' if s.needs_next_loop else 'no'}  "
            f"cache r/w {s.cache_read_input_tokens}/{s.cache_creation_input_tokens}"
            + (f"  route {s.route}" if s.route != "CHAT" else "")
            + (f"  (turn {s.turn_id})" if s.turn_id != r.record_id else "")
        )
    loop = r.loop
    out.append(
        f"  loop       stop {loop.stop_reason or '-'} after {len(r.steps)} step(s), "
        f"reroute {'yes' if loop.reroute_used else 'no'}"
        + (f" (refused {loop.reroute_refused})" if loop.reroute_refused else "")
        + f", worker calls {loop.worker_calls}"
        + (f" ({loop.stop_detail})" if loop.stop_detail else "")
        + (f", resumed from {loop.resumed_from}" if loop.resumed_from else "")
    )
    for e in loop.events:
        fields = {k: v for k, v in e.model_dump(exclude={"event", "step", "other"}).items() if v is not None}
        shown = " ".join(f"{k}={plain(v)}" for k, v in {**fields, **e.other}.items())
        out.append(f"  event      {e.step} {e.event:<16} {_short(shown, 160)}")
    return out


def _route_line(r: ObservabilityRecord) -> str:
    d = r.route
    if d is None:
        return "  route      -"
    return (
        f"  route      {d.initial_route} by {d.source} ({d.rule_id or d.reason or '-'}), "
        f"confidence {d.confidence:.2f}"
        + ("  LOCAL ONLY" if d.local_only else "")
        + (f"  served by {', '.join(d.peers)}" if d.peers else "")
        + (f"  refused {d.refused}" if d.refused else "")
        + (f"  commands {' '.join(d.commands)}" if d.commands else "")
        + (
            f"  classifier {d.classifier_route or '-'} {d.classifier_confidence or 0:.2f}"
            if d.classifier_route or d.classifier_error
            else ""
        )
        + (f" ({d.classifier_error})" if d.classifier_error else "")
    )


def replay_report(rep: ReplayReport) -> str:
    out = [
        f"replay of turn {rep.turn_id} (org {rep.org_id}), recorded {rep.recorded_at.isoformat()}, "
        f"replayed {rep.replayed_at.isoformat()} with today's configuration",
        f"  {'':<14} {'recorded':<40} today",
    ]
    steps = rep.steps if len(rep.steps) > 1 else []
    for i, st in enumerate(steps or [None]):
        if st is not None:
            out.append(f"  step {st.step}" + (" (the last)" if i == len(steps) - 1 else ""))
        before, after = (rep.recorded, rep.replayed) if st is None else (st.recorded, st.replayed)
        for stage in ("flags", "guardian", "authorization", "execution"):
            if stage == "flags" and i > 0:
                continue
            old, new = getattr(before, stage), getattr(after, stage)
            out.append(f"  {stage:<14} {old:<40} {new}" + ("   <- CHANGED" if old != new else ""))
    if rep.differences:
        out.append(f"  {len(rep.differences)} difference(s):")
        out += [
            f"    {d.stage}: {d.recorded} -> {d.replayed}" + (f"  ({d.note})" if d.note else "")
            for d in rep.differences
        ]
    else:
        out.append("  no difference: today's configuration decides as it did")
    if rep.masked_parameters:
        out.append("  note: the recorded parameters are masked; the dry-run executor saw the masked values")
    out.append(f"  LLM calls made: {rep.llm_calls}")
    return "\n".join(out)


def audit_report(rep: AuditReport) -> str:
    out = [
        f"constitution audit {rep.since.isoformat()} .. {rep.until.isoformat()}: {rep.records} record(s), "
        f"{rep.llm_records} from the LLM arm — " + ("clean" if rep.clean else "FINDINGS")
    ]
    for code, n in sorted(rep.counts().items()):
        out.append(f"  {code:<30} {n}")
    for f in rep.findings[:100]:
        out.append(f"  [{f.severity}] {f.at} {f.org_id}/{f.turn_id} {f.code}: {_short(f.detail, 120)}")
    for a in rep.violation_alerts:
        out.append(
            f"  alert {a['at']} {a['code']} turn {a.get('turn_id') or '-'}: {_short(a.get('message'), 100)}"
        )
    return "\n".join(out)


def cost_report(rep: CostReport) -> str:
    scope = f"org {rep.org_id}" if rep.org_id else "all organisations"
    return "\n".join(
        [
            f"cost {rep.day.isoformat()} ({rep.timezone}), {scope}",
            f"  turns          {rep.turns}",
            f"  tokens         in {rep.input_tokens}  out {rep.output_tokens}  cache read {rep.cache_read_input_tokens}"
            f"  cache write {rep.cache_creation_input_tokens}  (cache hit {_pct(rep.cache_hit_ratio)})",
            f"  today          {rep.cost_today_usd:.4f} USD of {rep.daily_budget_usd:.2f} USD budget "
            f"({rep.cost_today_usd / rep.daily_budget_usd:.1%})"
            + ("  OVER BUDGET" if rep.over_daily_budget else "")
            + (f", shadow {rep.shadow_cost_today_usd:.4f} USD" if rep.shadow_cost_today_usd else ""),
            f"  this month     {rep.cost_month_usd:.4f} USD, projected {rep.projected_month_usd:.4f} USD "
            f"(budget {rep.monthly_budget_usd:.2f} USD)",
            *[f"  model {m:<20} {c:.6f} USD" for m, c in rep.by_model.items()],
            *[f"  purpose {p:<18} {c:.6f} USD" for p, c in rep.by_purpose.items()],
        ]
    )


def metrics_table(rows: list[WindowStats]) -> str:
    head = (
        f"{'window start (UTC)':<19}  {'turns':>5} {'p95 LLM ms':>10} {'tool err':>8} {'confirm':>8} "
        f"{'block':>7} {'conf':>5} {'avg ms':>8} {'USD':>9}"
    )
    lines = [head, "-" * len(head)]
    for s in rows:
        p95 = "—" if s.llm_latency_ms_p95 is None else f"{s.llm_latency_ms_p95:.0f}"
        conf = "—" if s.mean_confidence is None else f"{s.mean_confidence:.2f}"
        avg = "—" if s.avg_response_ms is None else f"{s.avg_response_ms:.0f}"
        lines.append(
            f"{s.start:%Y-%m-%d %H:%M:%S}  {s.turns:>5} {p95:>10} {_pct(s.tool_error_rate):>8} "
            f"{_pct(s.confirmation_rate):>8} {_pct(s.block_rate):>7} {conf:>5} {avg:>8} {s.cost_usd:>9.5f}"
        )
    return "\n".join(lines)
