"""The admin service: the operator dashboard, its JSON API and the scheduler's tasks.

``create_app(rt)`` builds the Flask app over a runtime; ``handle(request)`` is what the
``admin`` functions-framework target calls (it dispatches the request into the app, so
every path works behind the single function). The page, script and styles are package
files (``static/``); nothing is fetched from elsewhere.

=====================================  ========================================================
``GET /``                              the dashboard
``GET /orgs/<org>/turns/<turn>``       the dashboard opened on one turn's trail (also ``/admin/...``)
``GET /api/...``                       stats, metrics (with SVG charts), turns, trail, replay,
                                       shadow report and guard, flags and controls, alerts,
                                       LLM calls — see ``shared_lib.admin.api``
``POST /api/controls/<action>``        stop, pause, resume (a platform operator: ``identity``)
``POST /tasks/heartbeat``              liveness, pending alert delivery, threshold check, due tasks
                                       (reminders, goal check-ins, periodic tasks: ``shared_lib.ops.due_tasks``)
``POST /tasks/cost-check``             daily cost against the budget (kill switch over the hard limit)
``POST /tasks/maintenance``            threshold check and yesterday's constitution audit
``POST /tasks/memory/<job>``           one background memory job per organisation (``layers.memory.jobs``)
``POST /tasks/jobs/watchdog``          delegated jobs: lost publishes again, stalled or late ones timed out
                                       (the jobs feature's route, ``shared_lib.features.jobs.admin``)
``GET /healthz``                       liveness of the admin service itself
=====================================  ========================================================

Who may do what is ``shared_lib.admin.identity``: an operator's identity (a per-organisation
credential or a verified Google ID token), never a name in the body; ``/tasks/*`` take the
scheduler's OIDC identity.
"""

from __future__ import annotations

import importlib
import threading
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from flask import Flask, Response, redirect, request, send_from_directory
from werkzeug.wrappers import Response as WerkzeugResponse

from shared_lib.admin import memory_tasks
from shared_lib.admin.api import build_api, error, json_response, task_response
from shared_lib.admin.identity import Gate, IdTokenVerifier, Refused
from shared_lib.admin.memory_api import build_memory_api
from shared_lib.layers import memory
from shared_lib.observability.logs import log_event
from shared_lib.ops import audit, monitoring, queries
from shared_lib.telemetry import alerts
from shared_lib.wiring.features import FEATURES

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime

STATIC_DIR = Path(__file__).with_name("static")
_lock = threading.Lock()
_app: Flask | None = None


def gate_of(rt: Runtime, verifier: IdTokenVerifier | None = None) -> Gate:
    """The door of ``rt``'s settings: open reads and tasks only on an explicit local stack."""
    if verifier is None:
        from shared_lib.adapters.google_id_token import GoogleIdTokenVerifier

        verifier = GoogleIdTokenVerifier()
    return Gate(
        store=rt.store,
        local=rt.settings.explicit_local,
        verifier=verifier,
        audience=rt.settings.admin_audience,
        scheduler=rt.settings.scheduler_emails(),
    )


def create_app(rt: Runtime, *, gate: Gate | None = None) -> Flask:
    app = Flask(__name__, static_folder=None)
    app.config["JSON_AS_ASCII"] = False
    gate = gate or gate_of(rt)
    for build in (build_api, build_memory_api):
        app.register_blueprint(build(rt, gate))
    for feature in FEATURES:  # each feature's routes, by its manifest (``shared_lib.wiring.features``)
        if feature.admin is not None:
            for blueprint in importlib.import_module(feature.admin).blueprints(rt, gate):
                app.register_blueprint(blueprint)

    @app.errorhandler(Refused)
    def _refused(exc: Refused) -> Response:
        return error(exc.code, str(exc), exc.status)

    @app.before_request
    def _scheduler_only() -> Response | None:
        if not request.path.startswith("/tasks/"):
            return None
        decision = gate.check_task(request.headers)
        if decision.ok:
            return None
        log_event(
            "admin_task_refused", layer="admin", severity="WARNING", path=request.path, reason=decision.reason
        )
        return error("unauthorized", decision.reason, decision.status)

    @app.after_request
    def _headers(response: Response) -> Response:
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("X-Frame-Options", "DENY")
        response.headers.setdefault("Referrer-Policy", "no-referrer")
        response.headers.setdefault(
            "Content-Security-Policy",
            "default-src 'self'; img-src 'self' data:; style-src 'self'; "
            "script-src 'self'; connect-src 'self'; frame-ancestors 'none'",
        )
        return response

    @app.get("/")
    def index() -> Response:
        return send_from_directory(STATIC_DIR, "index.html", max_age=0)

    # not /static: functions-framework's own Flask app answers /static/* before any function
    @app.get("/assets/<path:name>")
    def static_file(name: str) -> Response:
        return send_from_directory(STATIC_DIR, name, max_age=0)

    @app.get("/orgs/<org>/turns/<turn_id>")
    @app.get("/admin/orgs/<org>/turns/<turn_id>")
    def turn_link(org: str, turn_id: str) -> WerkzeugResponse:
        return redirect(f"/?org={org}&turn={turn_id}")

    @app.get("/healthz")
    def healthz() -> Response:
        return json_response({"ok": True, "env": rt.settings.env})

    @app.get("/api/session")
    def session() -> Response:
        # the organisation's timezone: the page shows every time in it, with the zone
        decision = gate.identify(request.headers)
        operator = decision.operator if decision.ok else None
        return json_response(
            {
                **gate.describe(operator),
                "env": rt.settings.env,
                "timezone": queries.thresholds(rt.store).timezone,
            }
        )

    @app.post("/tasks/heartbeat")
    def heartbeat() -> Response:
        return task_response("heartbeat", lambda: monitoring.heartbeat(rt))

    @app.post("/tasks/cost-check")
    def cost_check() -> Response:
        return task_response("cost-check", lambda: monitoring.cost_check(rt))

    @app.post("/tasks/maintenance")
    def maintenance() -> Response:
        def run() -> dict[str, object]:
            now = rt.clock()
            report = audit.audit(rt.store, since=now - timedelta(days=1), until=now)
            if not report.clean:
                alerts.raise_alert(
                    rt,
                    "audit.daily",
                    f"constitution audit: {report.counts()} "
                    f"{len(report.violation_alerts)} violation alert(s)",
                    alert_id=f"audit-daily-{now:%Y%m%d}",
                    severity="warning",
                    details={"counts": report.counts()},
                )
            return {
                "audit": {"clean": report.clean, "counts": report.counts()},
                "breaches": monitoring.check_thresholds(rt),
                "alerts": alerts.sweep(rt),
            }

        return task_response("maintenance", run)

    @app.post("/tasks/memory/<job>")
    def memory_job(job: str) -> Response:
        if job not in memory.jobs(rt):
            return error("unknown_job", f"no memory job {job!r}", 404)
        return task_response(f"memory/{job}", lambda: memory_tasks.publish_jobs(rt, job))

    return app


def get_app() -> Flask:
    """The process's app over the process's runtime (``shared_lib.wiring.push.get_runtime``)."""
    global _app
    with _lock:
        if _app is None:
            from shared_lib.wiring.push import get_runtime

            _app = create_app(get_runtime())
        return _app


def dispatch(app: Flask, request: object) -> WerkzeugResponse:
    """Run ``request`` (a flask/werkzeug request from another app) through ``app``."""
    environ = getattr(request, "environ", None)
    if not isinstance(environ, dict):
        raise TypeError("dispatch expects a flask/werkzeug request")
    return Response.from_app(app.wsgi_app, environ)


def handle(request: object) -> WerkzeugResponse:
    """functions-framework entry: ``return shared_lib.admin.app.handle(request)``."""
    return dispatch(get_app(), request)
