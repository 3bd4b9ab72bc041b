"""Sealing: what a person gives the assistant to keep is stored encrypted, never destroyed.

A kept document (a memory, its search chunks, a task, a goal, a heartbeat task) is written as ``mask_stored``
text — unnumbered placeholders (``[PHONE]``), the same text search, keywords, embeddings and
every LLM read — plus one ``sealed`` field: for each string holding placeholders, its path in
the document ("content", "steps/0/text") -> one entry per placeholder, in the order they
occur, the value as typed encrypted with the organisation's vault key (one Fernet token per
value) or ``None`` for a placeholder that stood in the text already (a user who typed
``[PHONE]``). The value lives in the same document, so sealing costs one encryption per value
and no extra read or write, and ``charter data purge`` removes it with the document.

Only a reader the document's own rule allows (its author for a memory; a task's creator and
assignee: the handler that reads it decides) gets it ``unseal``-ed; everyone else reads the
placeholders, which a reply shows as words (``Sanitizer.present``). Without a key (``cipher``
``None``) a document is stored masked only, as before sealing.

>>> from cryptography.fernet import Fernet, MultiFernet
>>> cipher = MultiFernet([Fernet(Fernet.generate_key())])
>>> doc = seal({"content": "携帯は 090-1234-5678", "user_id": "u-1"}, cipher)
>>> doc["content"], len(doc["sealed"]["content"])
('携帯は [PHONE]', 1)
>>> unseal(doc, cipher)
({'content': '携帯は 090-1234-5678', 'user_id': 'u-1'}, ['090-1234-5678'])
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from typing import Any

from cryptography.fernet import InvalidToken, MultiFernet

from shared_lib.ports import Doc, Vector
from shared_lib.privacy.sanitizer import IDENTIFIER_KEY, PLACEHOLDER, STORED_PLACEHOLDER, Sanitizer

log = logging.getLogger(__name__)
SEALED_FIELD = "sealed"
# The result key a handler lists the values it unsealed for the asker under (the executor moves
# them to ``ToolResult.revealed``, out of what the LLM and the receipt see).
REVEALED = "_revealed"
# What a person gives the assistant to keep (the collections whose writers seal): the rest of
# the store is a log or the organisation's record, masked only.
KEPT_COLLECTIONS = frozenset({"memories", "memory_chunks", "tasks", "goals", "heartbeat_tasks"})
Entries = list[str | None]
_ANY = re.compile(rf"{PLACEHOLDER.pattern}|{STORED_PLACEHOLDER.pattern}")


def revealed(values: Sequence[str | None]) -> dict[str, list[str]]:
    """The result field listing ``values`` a handler gives the asker in clear (none: no field)."""
    kept = [v for v in values if v]
    return {REVEALED: kept} if kept else {}


def seal(data: Doc, cipher: MultiFernet | None, *, sanitizer: Sanitizer | None = None) -> Doc:
    """``data`` as a kept document is stored: masked, with the values it masked sealed.

    A ``sealed`` field already in ``data`` (a document read and written back) keeps its
    entries for the placeholders that were there; idempotent like ``mask_stored``."""
    s = sanitizer or Sanitizer.default()
    previous = _map(data.get(SEALED_FIELD))
    body = {k: v for k, v in data.items() if k != SEALED_FIELD}
    if cipher is None:
        stored: Doc = s.mask_stored(body)
        return stored
    sealed: dict[str, Entries] = {}
    out: Doc = _walk(body, "", lambda text, at: _seal_text(text, at, s, cipher, previous, sealed))
    if sealed:
        out[SEALED_FIELD] = sealed
    return out


def unseal(doc: Doc, cipher: MultiFernet | None) -> tuple[Doc, list[str]]:
    """``doc`` with its sealed values back in clear (for an allowed reader only) and those
    values; without a key or a sealed field, the masked document and no value."""
    sealed = doc.get(SEALED_FIELD)
    body = {k: v for k, v in doc.items() if k != SEALED_FIELD}
    if cipher is None or not isinstance(sealed, dict):
        return body, []
    values: list[str] = []

    def _open(text: str, at: str) -> str:
        entries = sealed.get(at)
        if not isinstance(entries, list):
            return text
        seen = [0]

        def one(m: re.Match[str]) -> str:
            if PLACEHOLDER.fullmatch(m.group(0)):  # numbered: not a stored one, never sealed
                return m.group(0)
            i, seen[0] = seen[0], seen[0] + 1
            token = entries[i] if i < len(entries) else None
            value = _decrypt(cipher, token)
            if value is None:
                return m.group(0)
            values.append(value)
            return value

        return _ANY.sub(one, text)

    opened: Doc = _walk(body, "", _open)
    return opened, values


def masked(doc: Doc) -> Doc:
    """``doc`` as someone who may not read its sealed values sees it: the placeholders."""
    return {k: v for k, v in doc.items() if k != SEALED_FIELD}


def destroyed(doc: Doc) -> list[str]:
    """The paths of ``doc`` holding a placeholder with no sealed value behind it (a value
    thrown away, or a placeholder the person typed)."""
    sealed = _map(doc.get(SEALED_FIELD))
    lost: list[str] = []

    def _check(text: str, at: str) -> str:
        entries = _list(sealed.get(at))
        kept = [e for e in entries if isinstance(e, str)]
        if len(STORED_PLACEHOLDER.findall(text)) > len(kept) or PLACEHOLDER.search(text):
            lost.append(at)
        return text

    _walk(masked(doc), "", _check)
    return lost


def masked_values(text: str, sanitizer: Sanitizer | None = None) -> tuple[str, list[str | None]]:
    """``mask_stored(text)`` and the value behind each of its placeholders, in order (``None``
    for a placeholder that stood in ``text`` already)."""
    numbered, vault = (sanitizer or Sanitizer.default()).mask(text)  # a fresh vault: this text's values
    values: list[str | None] = []

    def one(m: re.Match[str]) -> str:  # left to right: the values keep the placeholders' order
        found = m.group(0)
        if found in vault:  # masked now, stored unnumbered as any stored text
            values.append(vault[found])
            return f"[{m.group(1)}]"
        if STORED_PLACEHOLDER.fullmatch(found):
            values.append(None)
        return found

    return _ANY.sub(one, numbered), values


def seal_excerpt(
    stored: str, values: list[str | None], start: int, excerpt: str, cipher: MultiFernet | None
) -> Entries | None:
    """The sealed entries of ``excerpt``, the part of ``stored`` (``masked_values``) that begins at
    ``start`` (a search chunk of a kept text); ``None`` when it holds no value to seal."""
    if cipher is None:
        return None
    before = len(STORED_PLACEHOLDER.findall(stored[: max(start, 0)]))
    mine = values[before : before + len(STORED_PLACEHOLDER.findall(excerpt))]
    entries: Entries = [cipher.encrypt(v.encode()).decode() if v is not None else None for v in mine]
    return entries if any(entries) else None


def _seal_text(
    text: str,
    at: str,
    s: Sanitizer,
    cipher: MultiFernet,
    previous: dict[str, Any],
    sealed: dict[str, Entries],
) -> str:
    stored, values = masked_values(text, s)
    old = _list(previous.get(at))
    entries: Entries = [
        cipher.encrypt(v.encode()).decode()
        if v is not None
        else (old[i] if i < len(old) and isinstance(old[i], str) else None)  # its earlier seal
        for i, v in enumerate(values)
    ]
    if any(isinstance(e, str) for e in entries):
        sealed[at] = entries
    return stored


def _walk(value: Any, at: str, on_text: Callable[[str, str], str]) -> Any:
    if isinstance(value, str):
        return on_text(value, at)
    if isinstance(value, dict):
        return {
            k: v
            if isinstance(k, str) and IDENTIFIER_KEY.search(k)
            else _walk(v, f"{at}/{k}" if at else str(k), on_text)
            for k, v in value.items()
        }
    if isinstance(value, Vector):  # an embedding stays a vector value
        return value
    if isinstance(value, list | tuple):
        return [_walk(v, f"{at}/{i}", on_text) for i, v in enumerate(value)]
    return value


def _map(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _decrypt(cipher: MultiFernet, token: str | None) -> str | None:
    if not token:
        return None
    try:
        return cipher.decrypt(token.encode()).decode()
    except (InvalidToken, ValueError):
        log.warning("a sealed value could not be opened (wrong key?)")
        return None
