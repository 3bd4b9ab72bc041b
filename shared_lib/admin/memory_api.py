"""The dashboard's memory view: teachings, knowledge and company values (issue 20).

``GET /api/memory?org=ORG[&kind=K]`` lists them; ``GET /api/memory/search?org=ORG&q=…[&as=USER]``
searches as ``charter memory search``; ``POST /api/memory`` ``{"org", "kind", "text",
"title"?, "min_level"?, "priority"?}`` adds one and ``POST /api/memory/delete`` ``{"org", "id"}``
deletes one (its chunks and vectors too). A write is the operator's, as the person its identity
names (``shared_lib.admin.identity``; a ``by`` in the body must be that person, else 403), whose
level is checked as the CLI's ``--by`` (seed 000: a teaching or a value level 6, knowledge level
4; deleting: the author or that level); another organisation is 403.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flask import Blueprint, Response, request

from shared_lib.admin.api import error, guard, json_response, operator
from shared_lib.admin.identity import Gate, acting, read_org
from shared_lib.errors import ArgumentError, ConfigError
from shared_lib.memory.ingest import (
    KINDS,
    ItemNotFound,
    NotAllowed,
    add_item,
    delete_item,
    list_items,
    person_level,
)
from shared_lib.memory.search import Reader, search

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime


def build_memory_api(rt: Runtime, gate: Gate) -> Blueprint:
    api = Blueprint("memory_api", __name__, url_prefix="/api/memory")
    api.before_request(guard(gate))

    @api.get("")
    def items() -> Response:
        org, kind = (
            read_org(operator(), _text(request.args, "org")) or "",
            _text(request.args, "kind") or None,
        )
        if not org or (kind and kind not in KINDS):
            return error("bad_request", f"org is required; kind one of {', '.join(KINDS)}", 400)
        return json_response({"org": org, "items": list_items(rt.store, org, kind)})

    @api.get("/search")
    def find() -> Response:
        org, query, who = (_text(request.args, k) for k in ("org", "q", "as"))
        org = read_org(operator(), org) or ""
        if not org or not query:
            return error("bad_request", "org and q are required", 400)
        level = person_level(rt.store, org, who) if who else 6
        if level is None:
            return error("bad_request", f"{who} is not in the directory of {org}", 400)
        try:
            hits = search(rt.store, rt.embedder, org, query, reader=Reader(who or None, level), limit=10)
        except ConfigError as exc:
            return error("unavailable", str(exc), 503)
        return json_response({"query": query, "hits": [h.public() for h in hits]})

    @api.post("")
    def add() -> Response:
        body = _body()
        org, kind, text, named = (_text(body, k) for k in ("org", "kind", "text", "by"))
        if not org or kind not in KINDS:
            return error("bad_request", f"org and a kind ({', '.join(KINDS)}) are required", 400)
        by = acting(operator(), org, named)
        try:
            item = add_item(
                rt.store,
                rt.embedder,
                org,
                kind=kind,
                text=text,
                now=rt.clock(),
                by=by,
                title=_text(body, "title") or None,
                min_level=int(body.get("min_level") or 1),
                priority=int(body.get("priority") or 0),
            )
        except NotAllowed as exc:
            return error(exc.code, str(exc), 403)
        except (ArgumentError, ValueError, TypeError) as exc:
            return error("bad_request", str(exc), 400)
        return json_response({"item": item}, 201)

    @api.post("/delete")
    def remove() -> Response:
        body = _body()
        org, iid, named = (_text(body, k) for k in ("org", "id", "by"))
        if not org or not iid:
            return error("bad_request", "org and id are required", 400)
        by = acting(operator(), org, named)
        try:
            return json_response({"deleted": delete_item(rt.store, org, iid, by=by)})
        except NotAllowed as exc:
            return error(exc.code, str(exc), 403)
        except ItemNotFound as exc:
            return error("not_found", str(exc), 404)
        except ArgumentError as exc:
            return error("bad_request", str(exc), 400)

    return api


def _body() -> dict[str, Any]:
    body = request.get_json(silent=True) or {}
    return body if isinstance(body, dict) else {}


def _text(source: Any, key: str) -> str:
    value = str(source.get(key) or "").strip()
    return "" if "/" in value and key in ("org", "id", "by", "as") else value
