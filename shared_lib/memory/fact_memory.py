"""What leaves a conversation's window, kept in long-term memory first (seed 001 §19.7, §19.8).

Compaction calls ``keep`` before it writes a state in which messages or summaries have left the
window. Each fact of the departing messages (``fact_merge.kept_facts``: the rules' decisions,
commitments, preferences, dates, errors and their fixes, 「覚えておいて」, tool results, a reversed
decision superseded, then what the summary call proposed besides) and each summary that leaves (a level-2 chunk
folded into level 3 or cut, the part of level 3 an emergency cut drops: summaries of decisions
already) becomes a source of kind ``fact`` in the memory index (``index.prepare`` / ``write``):
masked, chunked, embedded, found by ``memory.search`` and ``charter memory search``.

* **Scope.** As a memory is: the chunk carries the conversation's person as ``user_id`` (only
  they read it, ``search.Reader``; ``charter data purge`` finds it), ``min_level`` 1, and
  expires with the organisation's retention (``expires_at``).
* **Source.** Each chunk says where it came from (``origin``): the conversation's id, the
  ``seq`` range of the messages behind it, when it was said, and why it was kept (``kinds``).
* **Once.** The source id is a hash of the person and the fact's normalised text
  (``facts.normalised``: NFKC, no spaces, punctuation or emoji), so a second compaction, a
  redelivered turn or the same decision said again writes nothing: the source's manifest is
  looked for before embedding and again inside the transaction that would write it.
* **Personal data.** The history stores its values sealed (``context.history``); compaction
  opens them with the vault's key, so a fact holds the value and its chunk seals it again like
  any kept chunk (``sealing``, ``cipher``): shown in clear to its person only. A placeholder with
  no value behind it (a message stored before sealing, or without a key) is never kept as if
  it were the value: it is kept as the words a reply shows (「（電話番号・非表示）」). The fact's
  id hashes its masked text, so no value is derivable from an id and the same fact said with
  or without its value is kept once.
* **Whose.** A conversation is one person's (``org/room/user``): a fact is kept for the
  conversation document's ``user_id``, else the person its key names; a conversation naming
  nobody keeps nothing (a chunk without a person would be readable by everyone).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from cryptography.fernet import MultiFernet

from shared_lib.collections import conversation_id
from shared_lib.dates import JST, display_date
from shared_lib.memory.fact_merge import Proposed, kept_facts
from shared_lib.memory.facts import Fact, normalised
from shared_lib.memory.index import Prepared, prepare, source_path, write
from shared_lib.ports import Embedder, Store, Transaction
from shared_lib.privacy.sanitizer import STORED_PLACEHOLDER, Sanitizer

SOURCE_KIND = "fact"
KIND_LABELS = {
    "remember": "覚えておくこと",
    "decision": "決定事項",
    "commitment": "約束・期限",
    "preference": "好み・希望",
    "date": "日程",
    "error_fix": "エラーと解決策",
    "tool_result": "実行結果",
    "summary": "会話の要約",
}


@dataclass(frozen=True)
class Keeper:
    """What keeping needs besides the store: the embedder, the vault's key and the retention."""

    embedder: Embedder | None
    cipher: MultiFernet | None = None
    retention: timedelta | None = None


@dataclass(frozen=True)
class Departing:
    """What one compaction takes out of the window: raw messages (history documents), summaries
    (``summary`` with its ``from_seq``, ``to_seq``, ``first_at``, ``last_at``) and the facts the
    summary call of those messages proposed (``fact_merge``)."""

    messages: Sequence[dict[str, Any]] = ()
    summaries: Sequence[dict[str, Any]] = ()
    proposed: Sequence[Proposed] = ()

    def __bool__(self) -> bool:
        return bool(self.messages or self.summaries)


@dataclass(frozen=True)
class Kept:
    """What ``keep`` did: facts written, facts already kept (deduplicated)."""

    written: int = 0
    existing: int = 0
    sources: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class _Item:
    kinds: tuple[str, ...]
    body: str
    from_seq: str
    to_seq: str
    at: datetime | None


def fact_id(user_id: str, body: str) -> str:
    """The source id of a fact: its person and its normalised text, hashed."""
    return "F-" + hashlib.sha256(f"{user_id}\0{normalised(body)}".encode()).hexdigest()[:20]


def _worded(text: str) -> str:
    """A stored placeholder as the words a reply shows for a value it does not give back."""
    s = Sanitizer.default()
    return STORED_PLACEHOLDER.sub(
        lambda m: s.words(m.group(1)) if m.group(1) in s.wording else m.group(0), text
    )


def items_of(departing: Departing) -> list[_Item]:
    """Every fact of the departing messages (the rules', then the model's that add something),
    then every departing summary."""
    facts: list[Fact] = kept_facts(departing.messages, departing.proposed)
    out = [_Item(f.kinds, f.text, f.seq, f.seq, f.at) for f in facts]
    for s in departing.summaries:
        text = " ".join(str(s.get("summary") or "").split())
        if text:
            at = s.get("last_at") if isinstance(s.get("last_at"), datetime) else None
            out.append(
                _Item(("summary",), text, str(s.get("from_seq") or ""), str(s.get("to_seq") or ""), at)
            )
    return out


def text_of(item: _Item) -> str:
    """The memory's text: why it is kept and when it was said, then the fact."""
    labels = "・".join(KIND_LABELS[k] for k in item.kinds)
    when = f"（{display_date(item.at.astimezone(JST).date())}の会話）" if item.at else ""
    return f"{labels}{when}: {_worded(item.body)}"


def person_of(conversation_key: str) -> str:
    """The person a conversation key (``org/room/user``) names; ``""`` for another shape."""
    parts = conversation_key.split("/")
    return parts[-1] if len(parts) >= 3 else ""


def keep(
    store: Store,
    org_id: str,
    conversation_key: str,
    user_id: str,
    departing: Departing,
    keeper: Keeper,
    *,
    now: datetime,
) -> Kept:
    """Keep the facts of ``departing`` as memory chunks of ``user_id`` in ``org_id``, each once."""
    user_id = user_id or person_of(conversation_key)
    if not user_id:
        return Kept()  # nobody's: never a chunk everyone may read
    written, existing, sources = 0, 0, []
    expires = now + keeper.retention if keeper.retention is not None else None
    for item in items_of(departing):
        sid = fact_id(user_id, str(Sanitizer.default().mask_stored(item.body)))
        sources.append(sid)
        if store.get(source_path(org_id, SOURCE_KIND, sid)) is not None:
            existing += 1
            continue
        prepared = prepare(
            keeper.embedder,
            org_id,
            source_kind=SOURCE_KIND,
            source_id=sid,
            text=text_of(item),
            now=now,
            user_id=user_id,
            tags=item.kinds,
            expires_at=expires,
            cipher=keeper.cipher,
            happened_at=item.at,  # a hit says when it was said, as an episode's says when it happened
        )
        origin = {
            "conversation_id": conversation_id(conversation_key),
            "from_seq": item.from_seq,
            "to_seq": item.to_seq,
            "said_at": item.at,
            "kinds": list(item.kinds),
        }
        for doc in prepared.chunks.values():
            doc["origin"] = origin

        def once(txn: Transaction, sid: str = sid, prepared: Prepared = prepared) -> bool:
            if txn.get(source_path(org_id, SOURCE_KIND, sid)) is not None:
                return False  # kept meanwhile (a concurrent compaction, a redelivery)
            write(txn, prepared)
            return True

        if store.run_transaction(once):
            written += 1
        else:
            existing += 1
    return Kept(written, existing, tuple(sources))
