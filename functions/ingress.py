"""HTTP entrypoint of ingress: ``POST /webhooks/{chatwork|line|slack|http}`` (logic in shared_lib)."""

import flask
import functions_framework

from shared_lib.layers.ingress import handle_http
from shared_lib.wiring.push import get_runtime


@functions_framework.http
def ingress(request: flask.Request) -> flask.Response:
    parts = [p for p in request.path.split("/") if p]
    if parts in (["healthz"], []):
        return flask.jsonify({"ok": True})
    if len(parts) != 2 or parts[0] != "webhooks":
        return flask.make_response(flask.jsonify({"error": "not_found"}), 404)
    status, body = handle_http(
        get_runtime(),
        parts[1],
        request.method,
        dict(request.headers),
        request.args.to_dict(),
        request.get_data(cache=False),
    )
    return flask.make_response(flask.jsonify(body), status)
