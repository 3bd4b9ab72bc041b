"""A value built on its first use, once per process, under a lock (``BuiltOnce``).

What a process may never need (a fallback peer's SDK, the providers' reply clients) is held as
one of these: the holder knows how to build it and builds it when first asked.

>>> calls = []
>>> once = BuiltOnce(lambda: calls.append(1) or "client")
>>> once.built, once.get(), once.get(), once.built, calls
(False, 'client', 'client', True, [1])
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class BuiltOnce(Generic[T]):
    def __init__(self, build: Callable[[], T]) -> None:
        self._build = build
        self._value: T | None = None
        self._done = False
        self._lock = threading.Lock()

    @property
    def built(self) -> bool:
        return self._done

    def get(self) -> T:
        """The value, built now (by one caller; the others wait for it) if it was not."""
        if not self._done:
            with self._lock:
                if not self._done:
                    self._value, self._done = self._build(), True
        return self._value  # type: ignore[return-value]
