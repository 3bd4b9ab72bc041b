"""The dashboard's delegated jobs (issue 22, seed 001 §15): ``GET /api/jobs?org=ORG[&status=S]``
lists them (every organisation without ``org``, for a platform operator), ``POST
/api/jobs/<job_id>/cancel`` ``{"org"}`` cancels a live one as ``charter jobs cancel`` does (the
requester is told once), by the person the operator's identity names: a ``by`` in the body must
be that person, and another organisation's job is 403 (``shared_lib.admin.identity``). The
scheduler's ``POST /tasks/jobs/watchdog`` (every minute) runs the jobs' sweep
(``steps.sweep``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flask import Blueprint, Response, request

from shared_lib.admin.api import error, guard, json_response, operator, task_response
from shared_lib.admin.identity import Gate, acting, read_org
from shared_lib.features.jobs import state as agent_jobs
from shared_lib.features.jobs import steps as job_turns
from shared_lib.features.jobs.state import JobError

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime


def blueprints(rt: Runtime, gate: Gate) -> list[Blueprint]:
    """The operator's ``/api/jobs`` and the scheduler's watchdog task (the app checks its identity)."""
    tasks = Blueprint("jobs_tasks", __name__)

    @tasks.post("/tasks/jobs/watchdog")
    def watchdog() -> Response:
        return task_response("jobs/watchdog", lambda: job_turns.sweep(rt))

    return [build_jobs_api(rt, gate), tasks]


def build_jobs_api(rt: Runtime, gate: Gate) -> Blueprint:
    api = Blueprint("jobs_api", __name__, url_prefix="/api/jobs")
    api.before_request(guard(gate))

    @api.get("")
    def jobs() -> Response:
        org, status = (str(request.args.get(k) or "").strip() for k in ("org", "status"))
        org = read_org(operator(), org or None) or ""
        if status and status not in agent_jobs.STATUSES:
            return error("bad_request", f"status is one of {', '.join(agent_jobs.STATUSES)}", 400)
        return json_response({"jobs": agent_jobs.list_jobs(rt.store, org or None, status or None)})

    @api.post("/<job_id>/cancel")
    def cancel(job_id: str) -> Response:
        body: Any = request.get_json(silent=True) or {}
        org, named = (str(body.get(k) or "").strip() for k in ("org", "by"))
        if not org:
            return error("bad_request", "org is required", 400)
        by = acting(operator(), org, named)
        try:
            job = job_turns.cancel(rt, org, job_id, by=by)
        except JobError as exc:
            known = agent_jobs.get(rt.store, org, job_id) is not None
            return error("conflict" if known else "not_found", str(exc), 409 if known else 404)
        return json_response({"job": job})

    return api
