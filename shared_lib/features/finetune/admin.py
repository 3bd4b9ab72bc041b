"""The dashboard's fine-tuning review (seed 001 §29.5: a review dashboard in the admin, §20).

``GET /api/ft?org=ORG[&status=S][&limit=N]`` lists the staged candidates (masked, newest first);
``GET /api/ft/<id>?org=ORG`` shows one; ``POST /api/ft/accept`` ``{"org", "id"}``,
``POST /api/ft/edit`` ``{"org", "id", "reply" | "proposal"}`` and ``POST /api/ft/reject``
``{"org", "id", "reason"}`` review one. Every request is an operator's of that organisation,
and a review is by the person the operator's identity names (``shared_lib.admin.identity``; a
``by`` in the body must be that person, else 403), whose level is checked as the CLI's ``--by``
(level 6). The export is
the CLI's (``charter ft export``): a dataset file belongs on the operator's disk, not in a page.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from flask import Blueprint, Response, request

from shared_lib.admin.api import error, guard, json_response, operator
from shared_lib.admin.identity import Gate, acting, read_org
from shared_lib.admin.memory_api import _body as request_body
from shared_lib.admin.memory_api import _text as field
from shared_lib.features.finetune.state import review
from shared_lib.memory.ingest import NotAllowed

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime

Review = Callable[[str, str, str, dict[str, Any]], dict[str, Any]]


def blueprints(rt: Runtime, gate: Gate) -> list[Blueprint]:
    return [build_ft_api(rt, gate)]


def build_ft_api(rt: Runtime, gate: Gate) -> Blueprint:
    api = Blueprint("ft_api", __name__, url_prefix="/api/ft")
    api.before_request(guard(gate))

    @api.get("")
    def candidates() -> Response:
        org, status = field(request.args, "org"), field(request.args, "status") or None
        org = read_org(operator(), org) or ""
        if not org or (status and status not in review.STATUSES):
            return error("bad_request", f"org is required; status one of {', '.join(review.STATUSES)}", 400)
        try:
            limit = min(max(int(request.args.get("limit") or 50), 1), 500)
        except ValueError:
            return error("bad_request", "limit is a number", 400)
        return json_response({"org": org, "candidates": review.list_candidates(rt.store, org, status, limit)})

    @api.get("/<cid>")
    def candidate(cid: str) -> Response:
        org = read_org(operator(), field(request.args, "org")) or ""
        if not org:
            return error("bad_request", "org is required", 400)
        return _answer(lambda: review.get_candidate(rt.store, org, cid), 200)

    def _review(act: Review) -> Response:
        body = request_body()
        org, cid, named = (field(body, k) for k in ("org", "id", "by"))
        if not org or not cid:
            return error("bad_request", "org and id are required", 400)
        by = acting(operator(), org, named)
        return _answer(lambda: act(org, cid, by, body), 200)

    @api.post("/accept")
    def accept() -> Response:
        return _review(lambda org, cid, by, _: review.accept(rt.store, org, cid, now=rt.clock(), by=by))

    @api.post("/reject")
    def reject() -> Response:
        return _review(
            lambda org, cid, by, body: review.reject(
                rt.store, org, cid, reason=str(body.get("reason") or ""), now=rt.clock(), by=by
            )
        )

    @api.post("/edit")
    def edit() -> Response:
        def act(org: str, cid: str, by: str, body: dict[str, Any]) -> dict[str, Any]:
            proposal = body.get("proposal")
            return review.edit(
                rt.store,
                org,
                cid,
                now=rt.clock(),
                reply=body.get("reply") if isinstance(body.get("reply"), str) else None,
                proposal=proposal if isinstance(proposal, dict) else None,
                by=by,
                known_tools=set(rt.registry.names()),
            )

        return _review(act)

    return api


def _answer(act: Callable[[], dict[str, Any]], status: int) -> Response:
    try:
        return json_response({"candidate": act()}, status)
    except NotAllowed as exc:
        return error(exc.code, str(exc), 403)
    except review.ReviewError as exc:
        code = {"not_found": 404, "no_target": 409}.get(exc.code, 400)
        return error(exc.code, str(exc), code)
