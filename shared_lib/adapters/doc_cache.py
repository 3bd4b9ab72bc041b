"""Slow-changing documents kept per process for a few seconds (issue 39).

For a document an operator or a rare turn changes and every turn reads (an organisation's
settings), read once per ``seconds`` per process instead of once per turn. A write in the same
process through ``forget`` is seen at once; a write in another process is seen within
``seconds``, the same bound the flags document has (``flags.provider``: 10 s). Never for what
decides an action a person may take (their level and department: the Authorization Gate reads
them from the store at the decision, seed 000 §4.4.2) and never inside a transaction.

``clock`` is monotonic and injectable (a test or the hops bench moves it instead of sleeping).

>>> from shared_lib.adapters.memory_store import MemoryStore
>>> store, now = MemoryStore(), [0.0]
>>> cache = DocCache(seconds=10, clock=lambda: now[0])
>>> store.set("orgs/a/settings/company", {"ft_staging": True})
>>> cache.read(store, "orgs/a/settings/company")
{'ft_staging': True}
>>> store.set("orgs/a/settings/company", {"ft_staging": False})
>>> cache.read(store, "orgs/a/settings/company"), (now.__setitem__(0, 10.5), cache.read(store, "orgs/a/settings/company"))[1]
({'ft_staging': True}, {'ft_staging': False})
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from shared_lib.adapters.doc_copy import copy_doc
from shared_lib.ports import Doc, Store


class DocCache:
    def __init__(self, *, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = seconds
        self.clock = clock
        self._lock = threading.Lock()
        # per store (weakly: a store that is gone takes its reads along; two runtimes of one
        # process, in tests or the bench, never share a read), then per path
        self._kept: weakref.WeakKeyDictionary[Any, dict[str, tuple[float, Doc | None]]] = (
            weakref.WeakKeyDictionary()
        )

    def read(self, store: Store, path: str) -> Doc | None:
        with self._lock:
            hit = self._kept.get(store, {}).get(path)
        if hit is not None and hit[0] > self.clock():
            return copy_doc(hit[1])
        doc = store.get(path)
        with self._lock:
            self._kept.setdefault(store, {})[path] = (self.clock() + self.seconds, copy_doc(doc))
        return doc

    def forget(self, path: str) -> None:
        """A write to ``path`` in this process: the next read goes to the store."""
        with self._lock:
            for kept in self._kept.values():
                kept.pop(path, None)
