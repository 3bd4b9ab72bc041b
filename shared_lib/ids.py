"""Identifiers and clocks, injectable for tests.

``new_turn_id()`` returns a ULID: 26 Crockford base32 characters whose lexical order is
their creation order (millisecond precision), so turn ids sort by time in Firestore.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_lock = threading.Lock()
_last_ms = 0
_last_rand = 0


def _encode(value: int, length: int) -> str:
    chars = []
    for _ in range(length):
        chars.append(_CROCKFORD[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def new_ulid(now_ms: int | None = None) -> str:
    """A monotonic ULID: within one millisecond the random part is incremented."""
    global _last_ms, _last_rand
    ms = int(time.time() * 1000) if now_ms is None else now_ms
    with _lock:
        if ms <= _last_ms:
            ms = _last_ms
            _last_rand = (_last_rand + 1) & ((1 << 80) - 1)
        else:
            _last_ms = ms
            _last_rand = int.from_bytes(os.urandom(10), "big")
        rand = _last_rand
    return _encode(ms, 10) + _encode(rand, 16)


def new_turn_id() -> str:
    return new_ulid()


def short_id_for(prefix: str, key: str) -> str:
    """The same short id for the same ``key`` (``prefix`` + six characters, ``J-7K2M9Q``): a redelivered step names what
    its first delivery named."""
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()
    return f"{prefix}-{_encode(int.from_bytes(digest[:4], 'big'), 6)}"


def new_short_id(prefix: str) -> str:
    """A short random id for display (approval ids, error ids): ``prefix-XXXXXX``."""
    return f"{prefix}-{_encode(int.from_bytes(os.urandom(4), 'big'), 6)}"


Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)
