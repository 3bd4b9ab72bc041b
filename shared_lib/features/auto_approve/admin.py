"""The dashboard's instant OFF of auto-approve (seed 002 §6.4): ``POST /api/approvals/auto_off``
``{"org"[, "user"][, "author"]}`` ends every grant of the organisation (or of one person), as
``charter approvals auto off`` does, by the person the operator's identity names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flask import Blueprint, Response, request

from shared_lib.admin.api import error, guard, json_response, operator
from shared_lib.admin.identity import Gate, acting
from shared_lib.features.auto_approve import store as auto_approve

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime


def blueprints(rt: Runtime, gate: Gate) -> list[Blueprint]:
    api = Blueprint("auto_approve_api", __name__, url_prefix="/api")
    api.before_request(guard(gate))

    @api.post("/approvals/auto_off")
    def auto_off() -> Response:
        """The instant OFF of auto-approve (seed 002 §6.4), as ``charter approvals auto off``."""
        body = request.get_json(silent=True) or {}
        if not isinstance(body, dict):
            return error("bad_request", "a JSON object is expected", 400)
        org, user, named = (str(body.get(k) or "").strip() for k in ("org", "user", "author"))
        who = operator()
        org = org or (who.org if who else "")
        if not org or "/" in org + user:
            return error("bad_request", "org is required (no '/')", 400)
        author = acting(who, org, named)
        doc = auto_approve.turn_off(
            rt.store, org, rt.clock(), by=author, policy=rt.policy.approval, user_id=user or None
        )
        return json_response({"off": doc})

    return [api]
