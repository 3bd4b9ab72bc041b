"""The fake Anthropic server's Vertex AI routes (``infra.fake_llm.vertex``): what Vertex rejects."""

from __future__ import annotations

import pytest

from infra.fake_llm.vertex import messages_body, vertex_route

PATH = "/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-6%4020261001:streamRawPredict"


def test_given_a_vertex_path_then_the_model_is_read_from_it_unquoted():
    route = vertex_route(PATH)
    assert route is not None and route.model == "claude-sonnet-4-6@20261001" and route.stream
    assert vertex_route("/v1/messages") is None
    assert vertex_route(PATH.replace(":streamRawPredict", ":predict")) is None


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"model": "x", "anthropic_version": "v", "stream": True}, "model: Extra inputs"),
        ({"stream": True}, "anthropic_version: Field required"),
        ({"anthropic_version": "v"}, "stream: streamRawPredict"),
    ],
)
def test_given_a_body_vertex_would_reject_then_the_problem(body, problem):
    route = vertex_route(PATH)
    assert route is not None
    _, found = messages_body(body, route)
    assert found is not None and found.startswith(problem)
