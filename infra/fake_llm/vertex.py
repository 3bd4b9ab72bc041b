"""The fake server's Vertex AI routes to Claude: what ``anthropic.AnthropicVertex`` sends.

``POST /v1/projects/{project}/locations/{region}/publishers/anthropic/models/{model}:rawPredict``
(``:streamRawPredict`` when streaming) carries a Messages body without ``model`` (it is in the
path) and with ``anthropic_version``, under ``Authorization: Bearer <token>``. The server turns
it into the ``/v1/messages`` body and answers it with the same engine.

>>> route = vertex_route("/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-x@1:rawPredict")
>>> route.model, route.stream
('claude-x@1', False)
>>> messages_body({"anthropic_version": "v", "max_tokens": 5, "messages": []}, route)
({'max_tokens': 5, 'messages': [], 'model': 'claude-x@1'}, None)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

_PATH = re.compile(
    r"^/v1/projects/(?P<project>[^/]+)/locations/(?P<region>[^/]+)"
    r"/publishers/anthropic/models/(?P<model>[^/:]+):(?P<method>rawPredict|streamRawPredict)$"
)


@dataclass(frozen=True)
class VertexRoute:
    project: str
    region: str
    model: str
    method: str

    @property
    def stream(self) -> bool:
        return self.method == "streamRawPredict"


def vertex_route(path: str) -> VertexRoute | None:
    """The Vertex model route of a request path (query string ignored), or None."""
    found = _PATH.match(path.split("?", 1)[0])
    if found is None:
        return None
    return VertexRoute(
        project=unquote(found["project"]),
        region=unquote(found["region"]),
        model=unquote(found["model"]),
        method=found["method"],
    )


def messages_body(body: Any, route: VertexRoute) -> tuple[Any, str | None]:
    """The ``/v1/messages`` body for a Vertex body, or the problem Vertex would report (400)."""
    if not isinstance(body, Mapping):
        return body, None  # the Messages validation reports it
    if "model" in body:
        return body, "model: Extra inputs are not permitted (the model is in the URL on Vertex AI)"
    if not body.get("anthropic_version"):
        return body, "anthropic_version: Field required"
    if bool(body.get("stream", False)) != route.stream:
        return body, f"stream: {route.method} does not match stream={bool(body.get('stream'))}"
    rest = {key: value for key, value in body.items() if key != "anthropic_version"}
    return {**rest, "model": route.model}, None
