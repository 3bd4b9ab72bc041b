"""One organisation's conversations of one day (JST), as the log a daily digest tells.

Read without a collection-group query: the organisation's conversations whose last message is
after the day began (``conversations.at``), then each one's messages of the day (``at`` in
``[start, end)``), in their order. Texts are as stored (masked); with the vault's key
(``cipher``) their sealed values are opened, so the digest's story can seal them again rather
than keep a placeholder with nothing behind it (its call masks them before the model reads them).
People are shown by their directory name, the assistant by the persona's.

>>> [t.isoformat() for t in day_window(date(2026, 11, 25))]
['2026-11-24T15:00:00+00:00', '2026-11-25T15:00:00+00:00']
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from cryptography.fernet import MultiFernet

from shared_lib.adapters.scoped import scoped
from shared_lib.collections import collection_path
from shared_lib.dates.model import JST
from shared_lib.ports import Doc, Store
from shared_lib.privacy.sealing import unseal

CONVERSATION_LIMIT = 500
MESSAGE_LIMIT = 500
MAX_LOG_CHARS = 12000
MESSAGE_CHARS = 400


@dataclass(frozen=True)
class DayLog:
    text: str  # one line per message: 「[HH:MM] 名前: 本文」
    events: int  # messages from people (what ``min_events_for_daily`` counts)
    user_ids: list[str]  # the people who spoke
    last_at: datetime | None  # the last message of the day


def day_window(day: date) -> tuple[datetime, datetime]:
    """The JST day ``day`` as a UTC interval ``[start, end)``."""
    start = datetime.combine(day, time(0), JST)
    return start.astimezone(UTC), (start + timedelta(days=1)).astimezone(UTC)


def day_messages(store: Store, org_id: str, day: date) -> list[Doc]:
    """Every message of ``org_id`` on ``day``, in order."""
    start, end = day_window(day)
    org_store = scoped(store, org_id, read_only=True)
    conversations = org_store.query(
        collection_path("conversations", org=org_id), where=[("at", ">=", start)], limit=CONVERSATION_LIMIT
    )
    found: list[Doc] = []
    for conversation, _ in conversations:
        found += [
            doc
            for _, doc in org_store.query(
                collection_path("messages", org=org_id, conversation=conversation),
                where=[("at", ">=", start), ("at", "<", end)],
                limit=MESSAGE_LIMIT,
            )
        ]
    return sorted(found, key=lambda d: str(d.get("seq") or d["at"].isoformat()))


def day_log(
    store: Store,
    org_id: str,
    day: date,
    *,
    persona_name: str,
    max_chars: int = MAX_LOG_CHARS,
    cipher: MultiFernet | None = None,
) -> DayLog:
    messages = [unseal(m, cipher)[0] for m in day_messages(store, org_id, day)]
    names: dict[str, str] = {}
    lines, people = [], []
    for doc in messages:
        user_id = str(doc.get("user_id") or "")
        if doc.get("role") == "user":
            people.append(user_id)
            if user_id not in names:
                person = store.get(f"orgs/{org_id}/users/{user_id}") if user_id else None
                names[user_id] = str(person.get("name") or "メンバー") if person else "メンバー"
            speaker = names[user_id]
        else:
            speaker = persona_name
        at = doc["at"].astimezone(JST).strftime("%H:%M")
        text = " ".join(str(doc.get("text") or "").split())[:MESSAGE_CHARS]
        lines.append(f"[{at}] {speaker}: {text}")
    kept: list[str] = []
    for line in reversed(lines):  # a long day keeps its end: what it came to
        if sum(len(k) + 1 for k in kept) + len(line) > max_chars:
            kept.append("（前略）")
            break
        kept.append(line)
    return DayLog(
        text="\n".join(reversed(kept)),
        events=len(people),
        user_ids=sorted(set(people)),
        last_at=messages[-1]["at"] if messages else None,
    )
