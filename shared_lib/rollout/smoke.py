"""Smoke turns: a webhook that asks to be handled by the candidate revisions only.

Why a smoke turn, and why this way. The pipeline deploys every layer's new revision under a
candidate tag with no traffic. Pub/Sub push subscriptions deliver to a service's URL, which
serves the revisions that have traffic, so a chain message never reaches a candidate: only
the candidate *ingress* could be smoke-tested through its tag URL. Cloud Run has no header
that routes an internal push to a tagged revision; only the tag URL
(``https://<tag>---<service host>``) does. So the smoke turn gets its own topics:

* the smoke test posts a webhook to the candidate ingress's tag URL with ``X-Charter-Smoke``,
  an HMAC of the body under the channel's webhook secret (``sign``): only someone who may
  send that channel's webhooks can mark a turn as smoke, and the mark cannot be moved to
  another body;
* the ingress marks the turn ``smoke`` (an envelope field and a message attribute), and every
  layer publishes a smoke turn to the smoke twin of the topic it would use
  (``Topology.route``; the twins are ``smoke`` in ``topology.json``);
* each twin subscription pushes to the candidate revision's tag URL of its target
  (``terraform/modules/pubsub``), so context, brain, guardian, authorizer, executor,
  responder and observer of the candidate all run the turn before any user reaches them.
  Every layer writes its revision in its trail entry, so the smoke test can prove it.

A header that is present but does not verify is refused (401) rather than ignored: a smoke
test must never pass because its turn quietly ran on the stable revisions.

>>> from shared_lib.channels.secrets import ChannelSecrets
>>> secrets = ChannelSecrets.local_defaults()
>>> body = b'{"text": "smoke"}'
>>> header = sign(secrets.webhook_secrets("http")[0], body)
>>> is_smoke("http", {SMOKE_HEADER: header}, body, secrets), is_smoke("http", {}, body, secrets)
(True, False)
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping

from shared_lib.channels.base import matches_any
from shared_lib.channels.secrets import ChannelSecrets
from shared_lib.errors import CharterError

SMOKE_HEADER = "x-charter-smoke"


class SmokeSignatureError(CharterError):
    """``X-Charter-Smoke`` is present but is not a signature of the body under the channel's secret."""


def sign(secret: str, body: bytes) -> str:
    """The ``X-Charter-Smoke`` value for ``body``: ``sha256=<hex HMAC-SHA256(secret, b"smoke." + body)>``."""
    key = secret.encode("utf-8", "surrogatepass")
    return "sha256=" + hmac.new(key, b"smoke." + body, hashlib.sha256).hexdigest()


# The synthetic tenant the pipeline's smoke turns come from (``infra.smoke_runner``).
SMOKE_ORG = "charter-smoke"


def is_smoke(channel: str, headers: Mapping[str, str], body: bytes, secrets: ChannelSecrets) -> bool:
    """Whether a verified delivery asks to be a smoke turn.

    ``headers`` are matched case-insensitively. Raises ``SmokeSignatureError`` when the header
    is there but signed by none of the channel's active webhook secrets.
    """
    value = next((v for k, v in headers.items() if k.lower() == SMOKE_HEADER), None)
    if value is None:
        return False
    active = list(secrets.webhook_secrets(channel))
    if channel == "http":  # the plain-HTTP channel signs per tenant: only the smoke tenant may ask
        active += list(secrets.http_tenants.get(SMOKE_ORG, ()))
    if not active or not matches_any([sign(secret, body) for secret in active], value.strip()):
        raise SmokeSignatureError(f"{channel}: {SMOKE_HEADER} does not verify")
    return True
