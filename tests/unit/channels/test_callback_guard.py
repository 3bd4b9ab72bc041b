"""A plain-HTTP ``callback_url`` is public HTTPS or nothing (issue 33): refused when the webhook
is accepted, and checked again at send time, where the post goes to the address just checked
(a name that resolves elsewhere by then reaches nothing it should not)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import httpx
import pytest

from shared_lib.channels import ChannelSecrets, IngressConfig, handle_webhook, http
from shared_lib.channels.callback_guard import CallbackRefused, check
from shared_lib.channels.clients import build_channels
from shared_lib.ports import OutboundReply

NOW = datetime(2026, 11, 25, 9, 30, tzinfo=UTC)
PUBLIC = "93.184.216.34"
DNS = {
    "hooks.acme.example": [PUBLIC],
    "metadata.attacker.example": ["169.254.169.254"],
    "intranet.acme.example": ["10.20.30.40"],
    "mixed.acme.example": [PUBLIC, "192.168.1.10"],
    "v6.acme.example": ["2606:2800:220:1:248:1893:25c8:1946"],
    "v6-link.acme.example": ["fe80::1%eth0"],
    "localhost": ["127.0.0.1"],
}


def resolve(host: str, _port: int) -> list[str]:
    if host in DNS:
        return DNS[host]
    try:  # a literal address resolves to itself, as getaddrinfo does
        import ipaddress

        return [str(ipaddress.ip_address(host.strip("[]")))]
    except ValueError:
        raise OSError(f"no such host {host}") from None


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/computeMetadata/v1/instance/service-accounts/default/token",
        "https://169.254.169.254/latest/meta-data/",
        "https://metadata.google.internal/computeMetadata/v1/",
        "https://METADATA.GOOGLE.INTERNAL./x",
        "https://metadata.attacker.example/cb",  # a public name pointing at the metadata server
        "https://10.0.0.5/cb",
        "https://172.16.8.1:8443/cb",
        "https://172.31.255.254/cb",
        "https://192.168.0.1/返信",
        "https://intranet.acme.example/cb",
        "https://mixed.acme.example/cb",  # one private answer is enough to refuse
        "https://[fe80::1]/cb",
        "https://v6-link.acme.example/cb",
        "https://[::ffff:169.254.169.254]/cb",
        "https://224.0.0.251/cb",
        "https://[ff02::1]/cb",
        "https://127.0.0.1:8080/cb",
        "https://localhost/cb",
        "https://0.0.0.0/cb",
        "https://100.64.0.1/cb",
        "http://hooks.acme.example/cb",  # plain http to a public host
        "https://user:pass@hooks.acme.example/cb",
        "https://no-such-host.invalid/cb",
        "ftp://hooks.acme.example/cb",
    ],
)
def test_in_the_cloud_only_public_https_is_a_callback(url):
    with pytest.raises(CallbackRefused):
        check(url, local=False, resolve=resolve)


@pytest.mark.parametrize(
    "url",
    ["https://hooks.acme.example/cb?token=t", "https://v6.acme.example:8443/返信", f"https://{PUBLIC}/cb"],
)
def test_public_https_is_accepted_and_pinned_to_its_checked_address(url):
    target = check(url, local=False, resolve=resolve)
    assert target.scheme == "https" and target.address in (PUBLIC, "2606:2800:220:1:248:1893:25c8:1946")
    host = f"[{target.address}]" if ":" in target.address else target.address
    assert target.pinned_url().startswith(f"https://{host}") and "acme.example" not in target.pinned_url()


@pytest.mark.parametrize("url", ["http://127.0.0.1:9000/reply", "http://localhost:9000/reply"])
def test_locally_plain_http_to_loopback_is_allowed_and_nothing_else_private(url):
    assert check(url, local=True, resolve=resolve).address == "127.0.0.1"
    with pytest.raises(CallbackRefused):
        check("http://169.254.169.254/x", local=True, resolve=resolve)
    with pytest.raises(CallbackRefused):
        check("http://hooks.acme.example/cb", local=True, resolve=resolve)


def _signed_http(payload: dict) -> tuple[dict[str, str], bytes]:
    body = json.dumps(payload, ensure_ascii=False).encode()
    stamp = str(int(NOW.timestamp()))
    secret = "acme-tenant-secret-0123456789"
    headers = {"Content-Type": "application/json", "X-Charter-Timestamp": stamp}
    return headers | {"X-Charter-Signature": http.sign(secret, stamp, body)}, body


def test_a_webhook_naming_the_metadata_server_as_callback_is_refused_in_the_cloud():
    # GIVEN production with a tenant, and a signed message whose callback is the metadata server
    secrets = ChannelSecrets.from_env(
        {"CHARTER_ENV": "prod", "HTTP_WEBHOOK_TENANTS": '{"acme": ["acme-tenant-secret-0123456789"]}'}
    )
    message = {"event_id": "ev-1", "room_id": "r-1", "user_id": "u-1", "text": "今日の予定を教えて🙏"}
    for callback, status in (
        ("http://169.254.169.254/computeMetadata/v1/", 400),
        ("https://hooks.acme.example/cb", 200),
    ):
        headers, body = _signed_http(message | {"callback_url": callback})
        out = handle_webhook(
            "http",
            "POST",
            headers,
            {},
            body,
            secrets=secrets,
            config=IngressConfig(),
            now=NOW,
            resolve=resolve,
        )
        # THEN the metadata callback is refused before any turn; the public one is accepted
        assert out.status == status, out.body
        assert (out.rejection == "callback_not_allowed") is (status == 400)


def test_at_send_time_a_name_that_now_resolves_to_the_metadata_server_gets_nothing():
    # GIVEN a reply whose callback name resolved publicly when accepted but now points inside
    seen: list[httpx.Request] = []
    answers = {"hooks.acme.example": [PUBLIC]}
    channels = build_channels(
        ChannelSecrets.from_env({"CHARTER_ENV": "prod", "CHARTER_HTTP_CALLBACK_HOSTS": "hooks.acme.example"}),
        client=httpx.Client(transport=httpx.MockTransport(lambda r: seen.append(r) or httpx.Response(200))),
        sleep=lambda _s: None,
        resolve=lambda host, _port: answers[host],
    )
    reply = OutboundReply(
        channel="http",
        org_id="acme",
        room_id="r-1",
        user_id="u-1",
        text="承知したウル🐺",
        idempotency_key="T1",
        reply_handle={"callback_url": "https://hooks.acme.example/cb"},
    )
    # WHEN it is public THEN the post goes to the checked address, the name in Host and SNI
    assert channels["http"].send(reply).ok
    assert seen[0].url.host == PUBLIC and seen[0].headers["host"] == "hooks.acme.example"
    assert seen[0].extensions["sni_hostname"] == "hooks.acme.example"
    # WHEN the name is rebound to the metadata server THEN nothing is posted
    answers["hooks.acme.example"] = ["169.254.169.254"]
    result = channels["http"].send(reply)
    assert not result.ok and result.error == "callback_not_allowed" and len(seen) == 1
