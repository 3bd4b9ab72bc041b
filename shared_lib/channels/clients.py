"""Reply clients: one ``Channel`` (``shared_lib.ports``) per provider, over ``httpx``.

============  =================================================  ===================================
channel       request                                            text limit per part (configurable)
============  =================================================  ===================================
chatwork      ``POST {base}/rooms/{room}/messages`` form         4,000 — ChatWork documents no API
              ``body=``, header ``X-ChatWorkToken``              limit; long posts are hard to read
line          ``POST {base}/v2/bot/message/reply``               5,000 per text message (LINE's max),
              (``replyToken``), else/then ``/push`` with         5 messages per call; parts past the
              ``X-Line-Retry-Key``                               first call are pushed
slack         ``POST {base}/chat.postMessage`` JSON, bearer      3,000 — Slack truncates ``text`` past
                                                                 40,000 and advises 4,000
http          ``POST callback_url`` or ``CHARTER_HTTP_REPLY_URL``  8,000 (the inbound maximum)
              JSON, ``Idempotency-Key`` and ``X-Charter-*``
              signature headers
============  =================================================  ===================================

Each ``send`` is one attempt sequence: parts go out in order, each with the retry policy
of ``transport.ReplyClient`` (429/5xx/connection errors, ``Retry-After``, backoff with
jitter, at most 3 attempts). Failures come back as ``SendResult(ok=False, error=code)``
with ``parts`` = how many parts were delivered before it; exactly-once across calls is
the responder's send receipt. Timeouts: connect 3 s, read 10 s.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import httpx

from shared_lib.channels import callback_guard
from shared_lib.channels import http as http_channel
from shared_lib.channels.base import split_text
from shared_lib.channels.callback_guard import Resolver
from shared_lib.channels.secrets import ChannelSecrets
from shared_lib.channels.transport import (
    DEFAULT_TEXT_LIMITS,
    ClientSettings,
    ReplyClient,
    SendFailure,
    parse_retry_after,
    response_json,
)
from shared_lib.observability.logs import log_event
from shared_lib.ports import Channel, OutboundReply, SendResult

__all__ = [
    "DEFAULT_TEXT_LIMITS",
    "ChatWorkChannel",
    "ClientSettings",
    "HttpChannel",
    "LineChannel",
    "SlackChannel",
    "build_channels",
    "parse_retry_after",
]

_LINE_RETRY_NAMESPACE = uuid.UUID("6b0c1f1e-8d1c-4c53-9a55-2f3c7c1d9e10")
_SLACK_RETRYABLE = frozenset({"ratelimited", "internal_error", "service_unavailable", "request_timeout"})


class ChatWorkChannel(ReplyClient):
    """Posts to the room of the reply handle (``room_id``), part by part."""

    name: str = "chatwork"

    def send(self, reply: OutboundReply) -> SendResult:
        token = self._secrets.chatwork_api_token
        parts = split_text(reply.text, self.limit)
        if not token or not parts:
            return self._not_ready("missing_api_token" if not token else "empty_text")
        room = quote(reply.reply_handle.get("room_id") or reply.room_id, safe="")
        url = f"{self._secrets.chatwork_api_base}/rooms/{room}/messages"
        headers = {"X-ChatWorkToken": token, "Content-Type": "application/x-www-form-urlencoded"}
        ids: list[str] = []
        for delivered, part in enumerate(parts):
            try:
                response = self.post(url, urlencode({"body": part}).encode(), headers)
            except SendFailure as failure:
                return self._failed(failure, delivered)
            ids.append(str(response_json(response).get("message_id", "")))
        return SendResult(ok=True, provider_message_id=ids[0] or None, status=200, parts=len(parts))


class LineChannel(ReplyClient):
    """Replies with the reply token; pushes when it is expired and for parts past 5 messages."""

    name: str = "line"

    def send(self, reply: OutboundReply) -> SendResult:
        token = self._secrets.line_channel_access_token
        parts = split_text(reply.text, self.limit)
        if not token or not parts:
            return self._not_ready("missing_api_token" if not token else "empty_text")
        handle = reply.reply_handle
        target = (
            handle.get("to")
            or handle.get("group_id")
            or handle.get("room_id")
            or handle.get("user_id")
            or reply.room_id
        )
        size = self._settings.line_messages_per_call
        batches = [parts[i : i + size] for i in range(0, len(parts), size)]
        delivered, first_id = 0, None
        for index, batch in enumerate(batches):
            messages = [{"type": "text", "text": text} for text in batch]
            try:
                if index == 0 and handle.get("reply_token"):
                    response = self._reply_or_push(handle["reply_token"], target, messages, reply, token)
                else:
                    response = self._push(target, messages, reply.idempotency_key, index, token)
            except SendFailure as failure:
                return self._failed(failure, delivered)
            delivered += len(batch)
            sent = response_json(response).get("sentMessages")  # absent on a 409 "already accepted"
            if first_id is None and isinstance(sent, list) and sent and isinstance(sent[0], dict):
                first_id = str(sent[0].get("id") or "") or None
        return SendResult(ok=True, provider_message_id=first_id, status=200, parts=delivered)

    def _headers(self, token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def _reply_or_push(
        self, reply_token: str, target: str, messages: list[dict[str, str]], reply: OutboundReply, token: str
    ) -> httpx.Response:
        body = json.dumps({"replyToken": reply_token, "messages": messages}, ensure_ascii=False).encode()
        try:
            return self.post(
                f"{self._secrets.line_api_base}/v2/bot/message/reply", body, self._headers(token)
            )
        except SendFailure as failure:
            if failure.status == 400 and "invalid reply token" in failure.detail.lower():
                return self._push(target, messages, reply.idempotency_key, 0, token)
            raise

    def _push(
        self, target: str, messages: list[dict[str, str]], key: str, index: int, token: str
    ) -> httpx.Response:
        # LINE deduplicates pushes by retry key; 409 means this key was already accepted.
        retry_key = uuid.uuid5(_LINE_RETRY_NAMESPACE, f"{key}:{index}")
        headers = self._headers(token) | {"X-Line-Retry-Key": str(retry_key)}
        body = json.dumps({"to": target, "messages": messages}, ensure_ascii=False).encode()
        return self.post(
            f"{self._secrets.line_api_base}/v2/bot/message/push",
            body,
            headers,
            idempotent=True,
            accept=frozenset({409}),
        )


class SlackChannel(ReplyClient):
    """``chat.postMessage`` in the handle's channel and thread; ``{"ok": false}`` is an error."""

    name: str = "slack"

    def send(self, reply: OutboundReply) -> SendResult:
        token = self._secrets.slack_bot_token
        parts = split_text(reply.text, self.limit)
        if not token or not parts:
            return self._not_ready("missing_api_token" if not token else "empty_text")
        handle = reply.reply_handle
        base: dict[str, str] = {"channel": handle.get("channel") or reply.room_id}
        thread = handle.get("thread_ts") or reply.thread_id
        if thread:
            base["thread_ts"] = thread
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json; charset=utf-8"}
        first_ts: str | None = None
        for delivered, part in enumerate(parts):
            body = json.dumps(base | {"text": part}, ensure_ascii=False).encode()
            try:
                response = self.post(
                    f"{self._secrets.slack_api_base}/chat.postMessage", body, headers, check=self._check
                )
            except SendFailure as failure:
                return self._failed(failure, delivered)
            first_ts = first_ts or str(response_json(response).get("ts", "")) or None
        return SendResult(ok=True, provider_message_id=first_ts, status=200, parts=len(parts))

    def _check(self, response: httpx.Response) -> None:
        data = response_json(response)
        if data.get("ok") is True:
            return
        error = str(data.get("error") or "unknown_error")
        wait = parse_retry_after(response.headers.get("retry-after"), self._clock())
        raise SendFailure(
            f"slack_{error}", response.status_code, retryable=error in _SLACK_RETRYABLE, retry_after=wait
        )


class HttpChannel(ReplyClient):
    """Posts JSON to the handle's ``callback_url`` (if its host is allowed) or the reply URL.

    A callback host is allowed when listed in ``CHARTER_HTTP_CALLBACK_HOSTS``; with no list,
    any host is allowed locally and none in a deployed environment (no open relay). Either way
    its address is checked again now (``callback_guard``) and the post connects to that address.
    """

    name: str = "http"

    resolve: Resolver | None = None  # a callback host's addresses (default: the system's)

    def _target(self, reply: OutboundReply) -> tuple[str | None, str, dict[str, str], dict[str, Any]]:
        """The URL to post to (or ``None`` and the reason there is none), the headers and the
        request extensions that pin a callback to the address checked just now."""
        callback = reply.reply_handle.get("callback_url")
        if not callback:
            return self._secrets.http_reply_url, "no_reply_url", {}, {}
        host = (urlsplit(callback).hostname or "").lower()
        allowed = self._secrets.http_callback_hosts
        if not (host in allowed or (not allowed and self._secrets.is_local)):
            return None, "callback_not_allowed", {}, {}
        try:  # again at send time: the name may resolve elsewhere now (DNS rebinding)
            target = callback_guard.check(callback, local=self._secrets.is_local, resolve=self.resolve)
        except callback_guard.CallbackRefused as exc:
            log_event("reply_callback_refused", layer="responder", severity="WARNING", reason=exc.reason)
            return None, "callback_not_allowed", {}, {}
        extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
        return target.pinned_url(), "", {"Host": target.host_header()}, extensions

    def send(self, reply: OutboundReply) -> SendResult:
        url, missing, pinned, extensions = self._target(reply)
        parts = split_text(reply.text, self.limit)
        if url is None or not parts:
            return self._not_ready(missing if url is None else "empty_text")
        secret = self._secrets.reply_secret(reply.org_id)  # the organisation's own, newest first
        for delivered, part in enumerate(parts):
            key = reply.idempotency_key if len(parts) == 1 else f"{reply.idempotency_key}:{delivered + 1}"
            body = json.dumps(
                {
                    "text": part,
                    "org_id": reply.org_id,
                    "room_id": reply.room_id,
                    "user_id": reply.user_id,
                    "thread_id": reply.thread_id,
                    "turn_id": reply.idempotency_key,
                    "idempotency_key": key,
                    "part": delivered + 1,
                    "parts": len(parts),
                },
                ensure_ascii=False,
            ).encode()
            headers = {"Content-Type": "application/json", "Idempotency-Key": key, **pinned}
            if secret:
                timestamp = str(int(self._clock().timestamp()))
                headers |= {
                    "X-Charter-Timestamp": timestamp,
                    "X-Charter-Signature": http_channel.sign(secret, timestamp, body),
                }
            try:
                self.post(url, body, headers, idempotent=True, extensions=extensions)
            except SendFailure as failure:
                return self._failed(failure, delivered)
        return SendResult(ok=True, status=200, parts=len(parts))


def build_channels(
    secrets: ChannelSecrets | Mapping[str, str],
    *,
    client: httpx.Client | None = None,
    settings: ClientSettings | None = None,
    sleep: Callable[[float], None] = time.sleep,
    resolve: Resolver | None = None,
) -> dict[str, Channel]:
    """One reply client per provider, sharing one HTTP client; ``secrets`` or the variables giving
    them; ``resolve`` the addresses of a callback host (default: the system's resolver).

    >>> sorted(build_channels({"CHARTER_ENV": "test"}))
    ['chatwork', 'http', 'line', 'slack']
    """
    if not isinstance(secrets, ChannelSecrets):
        secrets = ChannelSecrets.from_env(secrets)
    settings = settings or ClientSettings()
    shared = client or httpx.Client(timeout=settings.timeout())  # lives as long as the process
    options: dict[str, Any] = {"client": shared, "settings": settings, "sleep": sleep}
    http = HttpChannel(secrets, **options)
    http.resolve = resolve
    return {
        "chatwork": ChatWorkChannel(secrets, **options),
        "line": LineChannel(secrets, **options),
        "slack": SlackChannel(secrets, **options),
        "http": http,
    }
