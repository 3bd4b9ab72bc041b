"""Where a plain-HTTP ``callback_url`` may send our replies (and a delegated job's report).

A caller names the URL; we post to it later, from inside the deployment. So it must be a public
HTTPS endpoint, never something only our network reaches:

* ``https`` (``http`` only to a loopback address on an explicit local stack or in tests);
* its host is not a metadata name (``metadata.google.internal``, …) and every address it
  resolves to is global: no link-local (169.254/16, fe80::/10: the metadata server), private
  (10/8, 172.16/12, 192.168/16, fc00::/7), shared (100.64/10), loopback (outside local/test),
  multicast, unspecified or reserved address, IPv4-mapped ones judged as their IPv4.

It is checked when the webhook is accepted (``webhooks.handle_webhook``: 400
``callback_not_allowed``) and again when we send (``clients.HttpChannel``), where the reply goes
to the very address that was checked (``CallbackTarget.address``; TLS still verifies the host
name), so a DNS answer that changes in between (rebinding) reaches nothing it should not.

>>> check("https://hooks.example.com/r", local=False, resolve=lambda h, p: ["93.184.216.34"]).address
'93.184.216.34'
>>> check("https://169.254.169.254/x", local=False, resolve=lambda h, p: [h])
Traceback (most recent call last):
...
shared_lib.channels.callback_guard.CallbackRefused: callback_not_allowed: link_local 169.254.169.254
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from shared_lib.errors import CharterError

Resolver = Callable[[str, int], list[str]]
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
METADATA_HOSTS = frozenset(
    {"metadata", "metadata.google.internal", "metadata.goog", "instance-data", "instance-data.ec2.internal"}
)
SHARED = ipaddress.ip_network("100.64.0.0/10")


class CallbackRefused(CharterError):
    """A ``callback_url`` we will not post to; ``reason`` says why (for the log, not the caller)."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"callback_not_allowed: {reason}")
        self.reason = reason


@dataclass(frozen=True)
class CallbackTarget:
    url: str
    host: str
    address: str  # the checked address the request must connect to
    scheme: str

    def pinned_url(self) -> str:
        """``url`` with its host replaced by the checked address (the ``Host`` header keeps the name)."""
        parts = urlsplit(self.url)
        ip = ipaddress.ip_address(self.address)
        host = f"[{ip}]" if ip.version == 6 else str(ip)
        netloc = f"{host}:{parts.port}" if parts.port else host
        return urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))

    def host_header(self) -> str:
        parts = urlsplit(self.url)
        return f"{parts.hostname}:{parts.port}" if parts.port else str(parts.hostname)


def system_resolver(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to (the process's resolver)."""
    return sorted({str(info[4][0]) for info in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)})


def refusal(ip: IPAddress, *, local: bool) -> str | None:
    """Why ``ip`` may not be a callback's address, or ``None``."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_loopback:
        return None if local else "loopback"
    for reason, hit in (
        ("link_local", ip.is_link_local),
        ("multicast", ip.is_multicast),
        ("unspecified", ip.is_unspecified),
        ("private", ip.is_private),
        ("shared", isinstance(ip, ipaddress.IPv4Address) and ip in SHARED),
        ("reserved", ip.is_reserved or not ip.is_global),
    ):
        if hit:
            return reason
    return None


def check(url: str, *, local: bool, resolve: Resolver | None = None) -> CallbackTarget:
    """The target of ``url`` if we may post to it, else ``CallbackRefused``. ``local``: an
    explicit local stack or tests (loopback allowed, and plain ``http`` to it)."""
    parts = urlsplit(url)
    host = (parts.hostname or "").rstrip(".").lower()
    if parts.scheme not in ("https", "http") or not host:
        raise CallbackRefused("scheme")
    if parts.username or parts.password:
        raise CallbackRefused("credentials_in_url")
    if host in METADATA_HOSTS:
        raise CallbackRefused(f"metadata_host {host}")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        found = (resolve or system_resolver)(host, port)
        addresses = [ipaddress.ip_address(a.split("%", 1)[0]) for a in found]
    except (OSError, ValueError) as exc:
        raise CallbackRefused(f"unresolvable {host}") from exc
    if not addresses:
        raise CallbackRefused(f"unresolvable {host}")
    for ip in addresses:
        reason = refusal(ip, local=local)
        if reason:
            raise CallbackRefused(f"{reason} {ip}")
    if parts.scheme == "http" and not (local and all(ip.is_loopback for ip in addresses)):
        raise CallbackRefused("plain_http")
    return CallbackTarget(url=url, host=host, address=str(addresses[0]), scheme=parts.scheme)
