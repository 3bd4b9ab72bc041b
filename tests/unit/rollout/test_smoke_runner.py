"""``infra.smoke_runner``: one smoke turn through an ingress, its record checked revision by revision.

The ingress is the product's ``handle_http`` behind a WSGI app with the chain wired in process, so
the runner's HTTP request, the smoke header and the record are all real; only the network is not.
"""

from __future__ import annotations

import flask
import httpx

from infra.smoke_runner import LAYERS, SMOKE_ORG, SMOKE_USER, check_record, ensure_smoke_person, run_smoke
from shared_lib.layers.ingress import handle_http
from shared_lib.runtime import Runtime
from shared_lib.wiring.composition import build_runtime, wire_inprocess


def ingress_client(revision: str) -> tuple[Runtime, httpx.Client]:
    rt = build_runtime(
        {
            "CHARTER_ENV": "test",
            "CHARTER_LLM": "none",
            "CHARTER_CHANNELS": "recording",
            "CHARTER_REVISION": revision,
        }
    )
    wire_inprocess(rt)
    app = flask.Flask("ingress")

    @app.post("/webhooks/<channel>")
    def webhook(channel: str) -> flask.Response:
        request = flask.request
        status, body = handle_http(
            rt, channel, "POST", dict(request.headers), request.args.to_dict(), request.get_data()
        )
        return flask.make_response(flask.jsonify(body), status)

    return rt, httpx.Client(transport=httpx.WSGITransport(app=app), base_url="http://ingress")


def test_a_smoke_turn_on_the_expected_revision_passes():
    # GIVEN an ingress and chain of revision charter-x-c-abc1234
    rt, client = ingress_client("charter-x-c-abc1234")
    # WHEN the runner sends a smoke turn expecting the candidate tag c-abc1234
    result = run_smoke("http://ingress", rt.store, expect="c-abc1234", client=client, sleep=lambda s: None)
    # THEN the turn was recorded as smoke, every layer on that revision
    assert result.ok, result.problems
    assert result.record is not None and set(result.record["revisions"]) == set(LAYERS)


def test_a_turn_on_another_revision_fails_naming_each_layer():
    # GIVEN a chain still running the stable revision
    rt, client = ingress_client("charter-x-c-0ld0ld0")
    # WHEN the runner expects the candidate c-abc1234
    result = run_smoke("http://ingress", rt.store, expect="c-abc1234", client=client, sleep=lambda s: None)
    # THEN every layer is named as having run elsewhere
    assert not result.ok
    assert {p.split(":")[0] for p in result.problems} == set(LAYERS)


def test_a_record_that_is_not_smoke_or_misses_a_layer_fails():
    # GIVEN records of a normal turn and of a turn the observer never recorded its revision for
    revisions = dict.fromkeys(LAYERS, "candidate")
    normal = {"smoke": False, "revisions": revisions}
    partial = {"smoke": True, "revisions": {k: v for k, v in revisions.items() if k != "observer"}}
    # THEN each is refused with the reason
    assert check_record(normal, "candidate") == ["the record is not a smoke turn"]
    assert check_record(partial, "candidate") == ["observer: no revision recorded"]
    assert check_record({"smoke": True, "revisions": revisions}, "candidate") == []


def test_no_record_within_the_timeout_fails():
    # GIVEN an ingress whose chain is not wired: the turn is accepted but nobody records it
    rt = build_runtime({"CHARTER_ENV": "test", "CHARTER_LLM": "none", "CHARTER_CHANNELS": "recording"})
    ingress_rt, client = ingress_client("candidate")
    ensure_smoke_person(ingress_rt.store, SMOKE_ORG, SMOKE_USER)  # the tenant the ingress knows
    slept: list[float] = []
    # WHEN the runner waits on a store that never gets the record
    result = run_smoke(
        "http://ingress",
        rt.store,
        expect="candidate",
        client=client,
        timeout=2,
        interval=1,
        sleep=slept.append,
    )
    # THEN it gave up after the timeout and says so
    assert not result.ok and "no record" in result.problems[0] and slept == [1, 1]
