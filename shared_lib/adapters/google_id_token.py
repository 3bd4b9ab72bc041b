"""The ``IdTokenVerifier`` of the cloud (``shared_lib.admin.identity``): a Google-signed ID
token (an operator through Cloud Run's IAM, the scheduler's OIDC token), checked against
Google's public keys: signature, expiry, issuer, the audience when one is configured, and a
verified email. Tests use a fake verifier; this adapter is the only one that reaches Google.
"""

from __future__ import annotations

import logging

logger = logging.getLogger(__name__)


class GoogleIdTokenVerifier:
    def verify(self, token: str, audience: str | None) -> str | None:
        from google.auth.transport import requests
        from google.oauth2 import id_token

        try:
            claims = id_token.verify_oauth2_token(  # type: ignore[no-untyped-call]
                token, requests.Request(), audience
            )
        except Exception as exc:  # a bad token, or Google's keys out of reach: no identity
            logger.warning("ID token not verified: %s", type(exc).__name__)
            return None
        email = str(claims.get("email") or "").strip().lower()
        return email if email and claims.get("email_verified") is True else None
