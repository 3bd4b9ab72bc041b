"""Identities bound to the credential: the organisation of a delivery comes from its credential
(a plain-HTTP tenant's secret) or the ingress mapping (Slack team, LINE destination, ChatWork
room), never from the body's text; a plain-HTTP sender must be a person of that organisation's
directory. Refusals are 403 and publish nothing."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from infra.webhook_sender import build_request
from shared_lib.channels import ChannelSecrets, IngressConfig, chatwork, handle_webhook, http, line, slack
from shared_lib.channels.secrets import parse_tenants
from shared_lib.errors import ConfigError
from shared_lib.layers.ingress import handle_http
from shared_lib.tools.directory import seed_directory
from shared_lib.wiring.composition import build_runtime

NOW = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)
STAMP = str(int(NOW.timestamp()))
TENANTS = {"acme": ["acme-new", "acme-old"], "globex": ["globex-1"]}
PROD = ChannelSecrets.from_env(
    {
        "CHARTER_ENV": "prod",
        "HTTP_WEBHOOK_SECRET": "shared-secret",
        "HTTP_WEBHOOK_TENANTS": json.dumps(TENANTS),
    }
)
LOCAL = ChannelSecrets.from_env({"CHARTER_ENV": "test", "HTTP_WEBHOOK_TENANTS": json.dumps(TENANTS)})
JSON = {"Content-Type": "application/json"}
SHARED = LOCAL.webhook_secrets("http")[0]


def http_body(**fields: Any) -> bytes:
    payload = {"event_id": "e1", "room_id": "r1", "user_id": "u1", "text": "見積書のタスクをお願い"} | fields
    return json.dumps({k: v for k, v in payload.items() if v is not None}, ensure_ascii=False).encode()


def signed_by(secret: str, body: bytes) -> dict[str, str]:
    return JSON | {"X-Charter-Timestamp": STAMP, "X-Charter-Signature": http.sign(secret, STAMP, body)}


def deliver_http(secret: str, body: bytes, secrets: ChannelSecrets = PROD):
    return handle_webhook(
        "http", "POST", signed_by(secret, body), {}, body, secrets=secrets, config=IngressConfig(), now=NOW
    )


def refused(outcome, status: int, code: str) -> None:
    assert (outcome.status, outcome.rejection, outcome.messages) == (status, code, []), outcome.body


# ------------------------------------------------------------------------- plain HTTP tenants


@pytest.mark.parametrize("secret", ["acme-new", "acme-old"])
def test_a_tenants_secret_acts_for_that_organisation_during_a_rotation_too(secret):
    outcome = deliver_http(secret, http_body(org_id="acme"))
    assert outcome.status == 200 and [m.org_id for m in outcome.messages] == ["acme"]


def test_a_body_without_org_id_is_the_tenants():
    outcome = deliver_http("globex-1", http_body())
    assert [m.org_id for m in outcome.messages] == ["globex"]


@pytest.mark.parametrize("named", ["globex", "ghost", "default"])
def test_a_body_naming_another_organisation_is_403_and_publishes_nothing(named):
    # GIVEN acme's credential WHEN the body names any other organisation THEN 403
    refused(deliver_http("acme-new", http_body(org_id=named)), 403, "org_mismatch")


def test_a_bearer_credential_is_bound_the_same_way():
    body = http_body(org_id="globex")
    headers = JSON | {"Authorization": "Bearer acme-new"}
    outcome = handle_webhook("http", "POST", headers, {}, body, secrets=PROD, config=IngressConfig(), now=NOW)
    refused(outcome, 403, "org_mismatch")


def test_in_a_deployed_environment_the_shared_secret_authenticates_nothing():
    # GIVEN prod with a shared HTTP_WEBHOOK_SECRET WHEN a request is signed with it THEN 401
    outcome = deliver_http("shared-secret", http_body(org_id="acme"))
    assert (outcome.status, outcome.rejection) == (401, "bad_signature")
    # AND with no tenant at all, nothing is configured to accept anything
    no_tenants = ChannelSecrets.from_env({"CHARTER_ENV": "prod", "HTTP_WEBHOOK_SECRET": "shared-secret"})
    assert deliver_http("shared-secret", http_body(), no_tenants).rejection == "no_secret_configured"


def test_locally_the_shared_secret_is_the_developers_credential_for_any_organisation():
    outcome = deliver_http(SHARED, http_body(org_id="anything"), LOCAL)
    assert [m.org_id for m in outcome.messages] == ["anything"]
    assert [m.org_id for m in deliver_http(SHARED, http_body(), LOCAL).messages] == ["default"]


def test_a_published_local_tenant_secret_is_dropped_in_a_deployed_environment():
    published = ChannelSecrets.local_defaults().http_tenants["demo"][0]
    prod = ChannelSecrets.from_env(
        {"CHARTER_ENV": "prod", "HTTP_WEBHOOK_TENANTS": json.dumps({"demo": [published, "real"]})}
    )
    assert prod.http_tenants == {"demo": ("real",)}


@pytest.mark.parametrize(
    "raw",
    [
        '{"acme": ["s1"], "globex": ["s1"]}',  # one secret, two tenants: the credential names no one
        '["s1"]',
        '{"a/b": ["s1"]}',
        '{"acme": 3}',
        "not json",
    ],
)
def test_a_malformed_tenant_setting_refuses_to_start(raw):
    with pytest.raises(ConfigError, match="HTTP_WEBHOOK_TENANTS"):
        parse_tenants(raw)


def test_replies_are_signed_with_the_organisations_own_newest_secret():
    assert (PROD.reply_secret("acme"), PROD.reply_secret("initech")) == ("acme-new", "shared-secret")


def test_the_sender_signs_with_the_tenants_secret():
    # GIVEN the sender (infra) and the ingress share the tenants WHEN acme's message is built
    _, headers, body = build_request("http", "hi", org="acme", secrets=LOCAL, now=NOW)
    # THEN acme's own secret signed it, and the ingress binds it to acme
    assert headers["X-Charter-Signature"] == http.sign("acme-new", headers["X-Charter-Timestamp"], body)
    assert http.authenticate(
        {k.lower(): v for k, v in headers.items()}, {}, body, PROD, NOW, IngressConfig()
    ) == http.Authentication(org="acme")


# ------------------------------------------------------------------------- through the ingress


@pytest.fixture
def rt():
    runtime = build_runtime(
        {"CHARTER_ENV": "test", "CHARTER_LLM": "none", "HTTP_WEBHOOK_TENANTS": json.dumps(TENANTS)},
        clock=lambda: NOW,
    )
    seed_directory(runtime.store, "acme", [{"user_id": "u1", "name": "鈴木一郎", "level": 2}], {})
    return runtime


def post(rt, secret: str, body: bytes) -> tuple[int, dict[str, Any]]:
    return handle_http(rt, "http", "POST", signed_by(secret, body), {}, body)


def test_a_person_of_the_tenants_directory_gets_a_turn_under_the_directorys_name(rt):
    status, answer = post(rt, "acme-new", http_body(user_name="社長"))
    assert status == 200 and len(answer["turn_ids"]) == 1
    [(topic, data, _, _)] = rt.bus.published
    inbound = json.loads(data)["inbound"]
    assert (topic, inbound["org_id"], inbound["user_name"]) == ("received", "acme", "鈴木一郎")


@pytest.mark.parametrize(
    ("secret", "fields", "error"),
    [
        # a person the tenant does not have
        ("acme-new", {"user_id": "u-nobody"}, "unknown_user"),
        # the probe: a level-6 person of an organisation that does not exist (with the shared
        # secret, which locally may name any organisation: the directory still refuses)
        (SHARED, {"org_id": "ghost", "user_id": "boss", "user_name": "CEO (level 6)"}, "unknown_user"),
        ("acme-new", {"org_id": "ghost", "user_id": "boss"}, "org_mismatch"),
        # another tenant's person, named with this tenant's credential
        ("globex-1", {"org_id": "acme", "user_id": "u1"}, "org_mismatch"),
        ("globex-1", {"user_id": "u1"}, "unknown_user"),
    ],
)
def test_anyone_else_is_403_and_no_turn_is_published(rt, secret, fields, error):
    status, answer = post(rt, secret, http_body(**fields))
    assert (status, answer["error"]) == (403, error)
    assert rt.bus.published == []
    assert rt.store.query("orgs/acme/webhook_events") == []  # no dedupe record: nothing was accepted


def test_a_known_person_is_remembered_briefly_and_a_new_one_is_accepted_at_once(rt):
    # GIVEN a person the ingress has just looked up
    assert post(rt, "acme-new", http_body(event_id="k1"))[0] == 200
    # WHEN the directory changes under it: the person renamed, a second person added
    seed_directory(rt.store, "acme", [{"user_id": "u1", "name": "鈴木改", "level": 2}], {})
    seed_directory(rt.store, "acme", [{"user_id": "u2", "name": "佐藤花子", "level": 2}], {})
    # THEN the next webhook of the known person is acknowledged from memory (its old name)
    assert post(rt, "acme-new", http_body(event_id="k2"))[0] == 200
    # AND the new person is accepted at once: a person not found is never remembered
    assert post(rt, "acme-new", http_body(event_id="k3", user_id="u2"))[0] == 200
    names = [json.loads(data)["inbound"]["user_name"] for _, data, _, _ in rt.bus.published]
    assert names == ["鈴木一郎", "鈴木一郎", "佐藤花子"]
    # AND once the memory is older than its ttl the directory is read again
    rt.people.ttl = 0
    assert post(rt, "acme-new", http_body(event_id="k4"))[0] == 200
    assert json.loads(rt.bus.published[-1][1])["inbound"]["user_name"] == "鈴木改"


def test_a_person_unknown_a_moment_ago_is_accepted_once_added(rt):
    assert post(rt, "acme-new", http_body(event_id="n1", user_id="u3"))[0] == 403
    seed_directory(rt.store, "acme", [{"user_id": "u3", "name": "高橋", "level": 2}], {})
    assert post(rt, "acme-new", http_body(event_id="n2", user_id="u3"))[0] == 200


# ------------------------------------------------------------------------- the other providers

MAPPED = IngressConfig.model_validate(
    {
        "orgs": {
            "slack_teams": {"T1": "acme"},
            "line_destinations": {"Ubot": "acme"},
            "chatwork_rooms": {"100": "acme"},
        },
        "answer_only_when_addressed": False,
    }
)
STRICT = MAPPED.model_copy(update={"orgs": MAPPED.orgs.model_copy(update={"refuse_unmapped": True})})
TEXT = 'org_id: globex {"org_id": "globex"} 私はglobexの社長です'


def provider_delivery(channel: str, tenant: str) -> tuple[dict[str, str], bytes]:
    """A signed delivery of ``channel`` whose provider tenant id is ``tenant`` and whose text claims globex."""
    if channel == "slack":
        payload: dict[str, Any] = {
            "type": "event_callback",
            "team_id": tenant,
            "event_id": "Ev1",
            "event": {"type": "app_mention", "user": "U1", "text": TEXT, "ts": "1.1", "channel": "C1"},
        }
    elif channel == "line":
        payload = {
            "destination": tenant,
            "events": [
                {
                    "type": "message",
                    "webhookEventId": "L1",
                    "timestamp": int(NOW.timestamp()) * 1000,
                    "source": {"type": "user", "userId": "Ualice"},
                    "message": {"type": "text", "id": "1", "text": TEXT},
                }
            ],
        }
    else:
        payload = {
            "webhook_event_type": "message_created",
            "webhook_event_time": int(NOW.timestamp()),
            "webhook_event": {"account_id": 7, "room_id": tenant, "message_id": "9", "body": TEXT},
        }
    body = json.dumps(payload, ensure_ascii=False).encode()
    local = ChannelSecrets.local_defaults()
    secret = local.webhook_secrets(channel)[0]
    signature = {
        "slack": lambda: {
            "X-Slack-Request-Timestamp": STAMP,
            "X-Slack-Signature": slack.sign(secret, STAMP, body),
        },
        "line": lambda: {"X-Line-Signature": line.sign(secret, body)},
        "chatwork": lambda: {"X-ChatWorkWebhookSignature": chatwork.sign(secret, body)},
    }[channel]()
    return JSON | signature, body


MAPPED_IDS = {"slack": "T1", "line": "Ubot", "chatwork": "100"}


@pytest.mark.parametrize("channel", ["slack", "line", "chatwork"])
def test_the_organisation_is_the_mappings_whatever_the_text_claims(channel):
    headers, body = provider_delivery(channel, MAPPED_IDS[channel])
    outcome = handle_webhook(
        channel, "POST", headers, {}, body, secrets=ChannelSecrets.local_defaults(), config=MAPPED, now=NOW
    )
    assert [m.org_id for m in outcome.messages] == ["acme"]


@pytest.mark.parametrize("channel", ["slack", "line", "chatwork"])
def test_an_unmapped_tenant_is_the_default_organisation_or_with_refuse_unmapped_403(channel):
    headers, body = provider_delivery(channel, "999")
    local = ChannelSecrets.local_defaults()
    lenient = handle_webhook(channel, "POST", headers, {}, body, secrets=local, config=MAPPED, now=NOW)
    assert [m.org_id for m in lenient.messages] == ["default"]
    strict = handle_webhook(channel, "POST", headers, {}, body, secrets=local, config=STRICT, now=NOW)
    refused(strict, 403, "unknown_tenant")
