"""The sender's rhythm (seed 001 §7.3, v0.4 ``DynamicDebounce``): how long to wait for the rest
of a burst follows how this person types in this room.

The window of a (organisation, channel, room, sender) is the median of the gaps between their
last messages × 1.5, clamped to ``[debounce_min_seconds, debounce_max_seconds]`` (the seed's
800 ms and 5000 ms, never past ``state.MAX_WINDOW_SECONDS``). Rules:

* **What a gap is.** Between two consecutive buffered messages of the sender, by the time the
  message was sent (the provider's, else when the ingress got it): their typing, not the
  network's. The last ``WINDOW_SIZE`` (20) gaps count, the seed's ``window_size``.
* **A new conversation is not rhythm.** A gap over ``RHYTHM_GAP_LIMIT`` (60 s) is left out: no
  window spans it (the longest is 5 s), so it says nothing about how long to wait, and it would
  only push the median to the ceiling for someone who writes once an hour. A gap of 0 (two
  messages stamped in one second) is rhythm: a fast typist gets a short window.
* **Too little history.** With fewer than ``MIN_GAPS`` (3) usable gaps, the channel's configured
  window (``debounce_seconds``) stands: a newcomer or a sender of one message an hour keeps it.
* **Not rhythm either:** an answer to a pending confirmation (never buffered, ``state``) and a
  message not buffered (a full buffer) leave no time here.

So a person who splits a request with ~3 s pauses has gaps of ~3 s and a window of ~4.5 s,
longer than their pause; one who fires short lines 0.5 s apart waits 0.8 s.

Where it is kept: one small document, ``debounce_pace`` (the buffer's hashed key as its id: the
times of the last ``WINDOW_SIZE + 1`` messages, no text), written by the batch's leader inside
the transaction that claims the batch (``state._claim``): the ingress pays nothing (no read, no
second write on the webhook's path, no contention between the webhooks of a burst), and the
times are merged, sorted and de-duplicated, so claims in any order or a redelivered claim keep
one history. Cost per turn on the context layer: one document read before the wait (skipped for
an answer to a confirmation), and in the claim's transaction one read and one write more.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

from shared_lib import collections
from shared_lib.ports import Store

WINDOW_SIZE = 20  # seed 001 §7.3: window_size
FACTOR = 1.5  # seed 001 §7.3: the median × 1.5
MIN_GAPS = 3
RHYTHM_GAP_LIMIT = timedelta(seconds=60)
PACE_KEEP = timedelta(days=7)


def pace_path(org_id: str, key: str) -> str:
    """The pace document of a buffer (``key``: the buffer's hashed id, ``state.buffer_key``)."""
    return collections.path("debounce_pace", org=org_id, id=key)


def gaps(times: Iterable[datetime]) -> list[float]:
    """The seconds between consecutive ``times`` (sorted first), the last ``WINDOW_SIZE``."""
    ordered = sorted(times)
    out = [(b - a).total_seconds() for a, b in itertools.pairwise(ordered)]
    return out[-WINDOW_SIZE:]


def rhythm_window(gap_seconds: Sequence[float], *, default: float, low: float, high: float) -> float:
    """The window for a sender with these gaps: ``median × FACTOR`` in ``[low, high]``, or
    ``default`` with fewer than ``MIN_GAPS`` gaps of one conversation.

    >>> rhythm_window([3.0, 3.2, 2.9], default=2.0, low=0.8, high=5.0)
    4.5
    """
    limit = RHYTHM_GAP_LIMIT.total_seconds()
    usable = [g for g in gap_seconds if 0.0 <= g <= limit]
    if len(usable) < MIN_GAPS:
        return default
    high = max(high, 0.0)
    return min(max(statistics.median(usable) * FACTOR, min(low, high)), high)


def times_of(doc: dict[str, Any] | None) -> list[datetime]:
    listed = (doc or {}).get("times")
    return [t for t in listed if isinstance(t, datetime)] if isinstance(listed, list) else []


def window_for(store: Store, path: str, *, default: float, low: float, high: float) -> float:
    """The window of the sender whose pace document is ``path`` (one read)."""
    return rhythm_window(gaps(times_of(store.get(path))), default=default, low=low, high=high)


def merged(old: Iterable[datetime], new: Iterable[datetime]) -> list[datetime]:
    """The history with ``new`` times in: sorted, each time once, the last ``WINDOW_SIZE + 1``."""
    return sorted(set(old) | set(new))[-(WINDOW_SIZE + 1) :]


def folded(doc: dict[str, Any] | None, times: Sequence[datetime], now: datetime) -> dict[str, Any]:
    """The pace document with a claimed batch's message times folded in (the claim's
    transaction reads ``doc`` before it writes anything, and writes this)."""
    return {"times": merged(times_of(doc), times), "updated_at": now, "expires_at": now + PACE_KEEP}
