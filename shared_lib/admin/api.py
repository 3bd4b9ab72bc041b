"""The dashboard's JSON API: thin views over ``shared_lib.ops`` (the CLI's code).

Reads answer ``GET /api/...`` (an organisation's operator reads its own organisation only);
emergency controls are ``POST /api/controls/{stop,pause,resume}`` with ``{"reason",
"ttl_hours"}`` by a platform operator; the instant OFF of auto-approve is ``POST
/api/approvals/auto_off`` with ``{"org", "user"?}`` by an operator of that organisation. The
author is the operator's identity (``shared_lib.admin.identity``): an ``author`` in the body
that is not that person is 403. Errors are
``{"error": code, "detail": text}`` with a 4xx status; never an exception string from
deeper than the input check.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from flask import Blueprint, Response, g, request

from shared_lib.admin.charts import line_chart
from shared_lib.admin.identity import Gate, Operator, Refused, deployment_control, read_org
from shared_lib.errors import ConfigError
from shared_lib.observability.logs import log_event
from shared_lib.ops import controls, monitoring, queries
from shared_lib.ops.error_guide import explain
from shared_lib.ops.replay import ReplayError, replay
from shared_lib.ops.spans import cloud_trace_url, in_cloud_trace, spans_of
from shared_lib.ops.waterfall import waterfall
from shared_lib.rollout.guard import guard_status
from shared_lib.rollout.report import build_report, load_comparisons

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime

MAX_LIMIT = 500
# The shadow view's report is over the newest comparisons of its window, at most this many
# (``charter shadow report`` and the gates read the whole window).
SHADOW_LATEST = 500


def json_response(data: Any, status: int = 200) -> Response:
    body = json.dumps(data, ensure_ascii=False, default=_default)
    return Response(body, status=status, mimetype="application/json", headers={"Cache-Control": "no-store"})


def error(code: str, detail: str, status: int) -> Response:
    return json_response({"error": code, "detail": detail}, status)


def _default(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else str(value)


def _arg(name: str) -> str | None:
    value = (request.args.get(name) or "").strip()
    if name == "org":
        return read_org(operator(), value or None)
    return value or None


def operator() -> Operator | None:
    """The operator of this request (``None``: an explicit local stack's read without one)."""
    found = g.get("operator")
    return found if isinstance(found, Operator) else None


def task_response(name: str, run: Callable[[], Any]) -> Response:
    """A scheduler task's answer: ``run()``'s result, the task logged (``admin_task``)."""
    result = run()
    log_event("admin_task", layer="admin", task=name, remote=request.remote_addr or "")
    return json_response({"task": name, "result": result})


def guard(gate: Gate) -> Callable[[], Response | None]:
    """A blueprint's ``before_request``: the request's operator, or its refusal."""

    def _guard() -> Response | None:
        decision = gate.check(request.headers, control=request.method == "POST")
        if not decision.ok:
            return error("unauthorized", decision.reason, decision.status)
        g.operator = decision.operator
        return None

    return _guard


def _limit(default: int) -> int:
    try:
        return max(1, min(MAX_LIMIT, int(request.args.get("limit", default))))
    except ValueError:
        return default


def build_api(rt: Runtime, gate: Gate) -> Blueprint:
    api = Blueprint("api", __name__, url_prefix="/api")
    api.before_request(guard(gate))

    @api.get("/stats")
    def stats() -> Response:
        return json_response(monitoring.today_panel(rt, org=_arg("org")))

    @api.get("/metrics")
    def metrics() -> Response:
        hours = max(1, min(24 * 14, int(_arg("hours") or 24)))
        step = max(60, min(24 * 60, int(_arg("step") or 60)))  # the roll-ups are hourly
        th = queries.thresholds(rt.store)
        rows = monitoring.chart_series(rt, hours=hours, step_minutes=step, org=_arg("org"), th=th)
        return json_response(
            {"series": [r.as_dict() for r in rows], "charts": charts(rows, th), "timezone": th.timezone}
        )

    @api.get("/turns")
    def turns() -> Response:
        since = queries.parse_since(_arg("since") or "7d", rt.clock())
        rows = queries.list_records(
            rt.store,
            since=since,
            org=_arg("org"),
            arm=_arg("arm"),
            outcome=_arg("outcome"),
            limit=_limit(100),
        )
        return json_response({"turns": [summary(r) for r in rows]})

    @api.get("/turns/<turn_id>")
    def turn(turn_id: str) -> Response:
        rec = queries.find_record(rt.store, turn_id, org=_arg("org"), shadow=_arg("shadow") == "1")
        if rec is None:
            return error("not_found", f"no record for turn {turn_id}", 404)
        return json_response(
            {
                "record": rec.model_dump(mode="json"),
                "llm_calls": queries.llm_calls_for(rt.store, rec.organization_id, rec.record_id),
                "shadow_comparison": queries.comparison_for(rt.store, rec.organization_id, rec.record_id),
                "error_guide": {code: explain(code) for code in error_codes(rec)},
            }
        )

    @api.get("/turns/<turn_id>/waterfall")
    def turn_waterfall(turn_id: str) -> Response:
        rec = queries.find_record(rt.store, turn_id, org=_arg("org"), shadow=_arg("shadow") == "1")
        if rec is None:
            return error("not_found", f"no record for turn {turn_id}", 404)
        out: dict[str, Any] = {"trace_id": rec.trace_id, "cloud_trace_url": None}
        if rec.trace_id and in_cloud_trace(rt.settings):
            out["cloud_trace_url"] = cloud_trace_url(rt.settings.project, rec.trace_id)
            return json_response({**out, **waterfall([])})
        spans = spans_of(rt.store, rec.trace_id) if rec.trace_id else []
        return json_response({**out, **waterfall(spans)})

    @api.get("/turns/<turn_id>/replay")
    def turn_replay(turn_id: str) -> Response:
        try:
            return json_response(replay(rt, turn_id, org=_arg("org")).as_dict())
        except ReplayError as exc:
            return error("not_replayable", str(exc), 404)

    @api.get("/shadow")
    def shadow() -> Response:
        since = queries.parse_since(_arg("since") or "7d", rt.clock())
        rows = load_comparisons(rt.store, since=since, org=_arg("org"), latest=SHADOW_LATEST)
        report = build_report(rows)
        sample = {"latest": SHADOW_LATEST, "read": len(rows), "limited": len(rows) >= SHADOW_LATEST}
        return json_response({"report": report, "guard": guard_status(rt), "sample": sample})

    @api.get("/flags")
    def flags() -> Response:
        return json_response(controls.state(rt))

    @api.get("/alerts")
    def alerts() -> Response:
        who = operator()
        if who is not None and not who.platform:  # alerts are the deployment's, of every organisation
            raise Refused(403, "not_platform", "alerts are read by platform operators")
        since = queries.parse_since(_arg("since") or "24h", rt.clock())
        return json_response({"alerts": monitoring.recent_alerts(rt, since=since, limit=_limit(50))})

    @api.get("/llm_calls")
    def llm_calls() -> Response:
        org, turn_id = _arg("org"), _arg("turn")
        if turn_id and org:
            return json_response({"llm_calls": queries.llm_calls_for(rt.store, org, turn_id)})
        return json_response({"llm_calls": queries.recent_llm_calls(rt.store, org=org, limit=_limit(50))})

    @api.get("/evaluations")
    def evaluations() -> Response:
        return json_response(queries.recent_evaluations(rt.store, org=_arg("org"), limit=_limit(50)))

    @api.post("/controls/<action>")
    def control(action: str) -> Response:
        body = request.get_json(silent=True) or {}
        if not isinstance(body, dict):
            return error("bad_request", "a JSON object is expected", 400)
        try:
            hours = float(body.get("ttl_hours") or 0)
            ttl = timedelta(hours=hours) if hours > 0 else None
            author = deployment_control(operator(), str(body.get("author") or "").strip())
            result = controls.apply(
                rt,
                action,
                author=author,
                reason=str(body.get("reason") or ""),
                ttl=ttl,
            )
        except (ConfigError, ValueError, TypeError) as exc:
            return error("bad_request", str(exc), 400)
        return json_response(result)

    @api.errorhandler(ValueError)
    def _bad_value(exc: ValueError) -> Response:
        return error("bad_request", str(exc), 400)

    return api


def summary(r: Any) -> dict[str, Any]:
    """A row of the turn browser."""
    return {
        "turn_id": r.record_id,
        "org_id": r.organization_id,
        "user_id": r.user_id,
        "channel": r.channel,
        "timestamp": r.timestamp.isoformat(),
        "arm": r.arm,
        "flags_arm": r.flags_arm,
        "response_kind": r.response_kind,
        "guardian_action": r.guardian_action,
        "guardian_reason": r.guardian_reason,
        "auth_result": r.auth_result,
        "llm_confidence": r.llm_confidence,
        "output_type": r.output_type,
        "tools": [t.tool_name for t in r.selected_tools],
        "total_duration_ms": r.total_duration_ms,
        "cost_usd": r.cost_usd,
        "errors": [e.code for e in r.errors],
        "input_message": r.input_message[:200],
        "final_response": r.final_response[:200],
    }


def error_codes(r: Any) -> list[str]:
    """The codes of a record's errors and its failed tool results, each once, in order."""
    codes = [e.code for e in r.errors] + [
        str(x["error_code"]) for x in r.execution_result if x.get("error_code")
    ]
    return list(dict.fromkeys(codes))


def tokens(s: Any) -> int:
    return int(s.input_tokens + s.output_tokens + s.cache_read_input_tokens + s.cache_creation_input_tokens)


def charts(rows: list[Any], th: Any) -> dict[str, str]:
    """The §15.1 metrics as inline SVG, one chart each, threshold dashed."""

    zone = ZoneInfo(th.timezone)

    def label(s: Any) -> str:  # the organisation's time, with its zone
        return f"{s.start.astimezone(zone):%m-%d %H:%M %Z}"

    def pts(attr: str) -> list[tuple[str, float | None]]:
        return [(label(s), getattr(s, attr)) for s in rows]

    return {
        "llm_latency": line_chart(
            "LLM latency p95 (ms)", pts("llm_latency_ms_p95"), threshold=th.llm_latency_ms, unit=" ms"
        ),
        "tool_error_rate": line_chart(
            "tool error rate", pts("tool_error_rate"), threshold=th.tool_error_rate, percent=True
        ),
        "confirmation_rate": line_chart(
            "confirmation rate", pts("confirmation_rate"), threshold=th.confirmation_rate, percent=True
        ),
        "block_rate": line_chart("block rate", pts("block_rate"), threshold=th.block_rate, percent=True),
        "cost": line_chart("LLM cost per window (USD)", pts("cost_usd")),
        "turns": line_chart("turns", [(label(s), float(s.turns)) for s in rows]),
        "tokens": line_chart("tokens (input, output, cache)", [(label(s), float(tokens(s))) for s in rows]),
    }
