"""Teachings, knowledge and company values: how they come in, with seed 000's levels.

Seed 000 §5.4.3's six levels (1 業務委託 … 4 幹部/部長, 5 管理部/取締役, 6 代表/CFO) decide who
may teach what:

* ``teaching`` (CEO教え) and ``value`` (the company's values) speak for the company: level 6
  (代表) only — they are the Context Builder's highest-priority text;
* ``knowledge`` (a company document): level 4 and up (幹部/部長), who own a department's
  procedures; it may be limited to readers of a level (``min_level``);
* deleting an item: its author, or a person of the level its kind needs to add it.

``by=None`` is the operator at the command line or the dashboard, who holds the store itself
(the CLI's ``--by`` and the dashboard's person field make the check a named person's).

Where each lives (what the Context Builder already reads): ``orgs/{org}/teachings/{id}``
(content, title, priority, active), ``orgs/{org}/knowledge/{id}`` (title, content,
min_level), ``orgs/{org}/company_values/{id}`` (content), whose texts joined, oldest first,
are ``orgs/{org}/settings/company.values``. Every item is also indexed as chunks
(``memory.index``) and deleting it removes them. Ids derive from the kind and the text, so
adding or importing the same text again changes nothing.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from pathlib import Path
from typing import Any

from cryptography.fernet import MultiFernet

from shared_lib import collections
from shared_lib.errors import ArgumentError, CharterError
from shared_lib.memory.episode_index import index_episode, reindex_episodes
from shared_lib.memory.index import index_text, remove_source, source_path
from shared_lib.ports import Doc, Embedder, Store
from shared_lib.privacy.sanitizer import Sanitizer
from shared_lib.privacy.sealing import unseal

KINDS = ("teaching", "knowledge", "value")
ADD_LEVEL = {"teaching": 6, "value": 6, "knowledge": 4}
PREFIX = {"teaching": "T", "knowledge": "K", "value": "V"}
COLLECTION = {"teaching": "teachings", "knowledge": "knowledge", "value": "company_values"}
LIST_LIMIT = 500
MAX_TEXT = 20_000


class NotAllowed(CharterError):
    """The named person's level does not allow this (``code``: ``unknown_person`` or ``level``)."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


class ItemNotFound(CharterError):
    """No teaching, knowledge document or value has that id in the organisation."""


def person_level(store: Store, org_id: str, user_id: str) -> int | None:
    """The directory's level of the person (seed 000: 1-6), ``None`` if not in the directory."""
    doc = store.get(collections.path("users", org=org_id, id=user_id))
    return int(doc.get("level", 2)) if doc else None  # the directory's default level (tools.directory)


def check_level(store: Store, org_id: str, by: str | None, needed: int, what: str) -> None:
    if by is None:
        return
    level = person_level(store, org_id, by)
    if level is None:
        raise NotAllowed(f"{by} is not in the directory of {org_id}", "unknown_person")
    if level < needed:
        raise NotAllowed(f"{what} needs level {needed}; {by} is level {level}", "level")


def item_id(kind: str, text: str) -> str:
    digest = hashlib.sha256(f"{kind}\0{text}".encode()).hexdigest()
    return f"{PREFIX[kind]}-{digest[:10]}"


def kind_of(item: str) -> str:
    for kind, prefix in PREFIX.items():
        if item.startswith(f"{prefix}-"):
            return kind
    raise ArgumentError(f"not a memory item id: {item!r} (T-…, K-… or V-…)")


def add_item(
    store: Store,
    embedder: Embedder | None,
    org_id: str,
    *,
    kind: str,
    text: str,
    now: datetime,
    by: str | None = None,
    title: str | None = None,
    min_level: int = 1,
    priority: int = 0,
) -> dict[str, Any]:
    """Add (or, for the same text, keep) an item after the level check; the item as listed."""
    if kind not in KINDS:
        raise ArgumentError(f"unknown kind {kind!r}; one of {', '.join(KINDS)}")
    text = text.strip()
    if not text or len(text) > MAX_TEXT:
        raise ArgumentError(f"a {kind} needs 1 to {MAX_TEXT} characters of text")
    if not 1 <= min_level <= 6:
        raise ArgumentError("min_level is a level of 1 to 6")
    check_level(store, org_id, by, ADD_LEVEL[kind], f"adding a {kind}")
    iid = item_id(kind, text)
    doc: Doc = {"content": text, "created_by": by or "operator", "created_at": now}
    if kind == "teaching":
        doc.update(title=title, priority=priority, active=True)
    elif kind == "knowledge":
        doc.update(title=title or text.splitlines()[0][:60], min_level=min_level)
    stored: Doc = Sanitizer.default().mask_stored(doc)
    store.set(_path(org_id, kind, iid), stored)
    _index_item(store, embedder, org_id, kind, iid, stored, now)
    if kind == "value":
        _write_values(store, org_id)
    return _listed(kind, iid, stored)


def delete_item(store: Store, org_id: str, iid: str, *, by: str | None = None) -> dict[str, Any]:
    """Delete an item (its author or a person of its kind's level), its chunks and vectors."""
    kind = kind_of(iid)
    path = _path(org_id, kind, iid)
    doc = store.get(path)
    if doc is None:
        raise ItemNotFound(f"no {kind} {iid} in {org_id}")
    if by is not None and doc.get("created_by") != by:
        check_level(store, org_id, by, ADD_LEVEL[kind], f"deleting a {kind} someone else added")
    chunks = remove_source(store, org_id, kind, iid)
    store.delete(path)
    if kind == "value":
        _write_values(store, org_id)
    return {**_listed(kind, iid, doc), "deleted": True, "chunks": chunks}


def list_items(store: Store, org_id: str, kind: str | None = None) -> list[dict[str, Any]]:
    """Every item of the organisation (of ``kind``), oldest first."""
    kinds = [kind] if kind else list(KINDS)
    items: list[dict[str, Any]] = []
    for k in kinds:
        coll = collections.collection_path(COLLECTION[k], org=org_id)
        items.extend(_listed(k, iid, d) for iid, d in store.query(coll, limit=LIST_LIMIT))
    return sorted(items, key=lambda i: (str(i["created_at"] or ""), i["id"]))


def reindex(
    store: Store,
    embedder: Embedder | None,
    org_id: str,
    *,
    now: datetime,
    cipher: MultiFernet | None = None,
    every: bool = True,
) -> dict[str, int]:
    """Index the teachings, knowledge documents, values, memories and episodes of the
    organisation again (every one, or with ``every=False`` only those never indexed: documents
    written before the index existed, or before episodes were indexed); the count per kind. An inactive teaching's chunks are removed. A memory's
    sealed values are opened with ``cipher`` (the vault's key) so its chunks seal them again
    (``sealing``). Vectors of another model: ``memory.reembed``."""
    counts = dict.fromkeys((*KINDS, "memory"), 0)

    def wanted(kind: str, iid: str) -> bool:
        return every or store.get(source_path(org_id, kind, iid)) is None

    for kind in KINDS:
        coll = collections.collection_path(COLLECTION[kind], org=org_id)
        for iid, doc in store.query(coll, limit=None):
            if not str(doc.get("content") or "").strip() or doc.get("active") is False:
                remove_source(store, org_id, kind, iid)
                continue
            if wanted(kind, iid):
                _index_item(store, embedder, org_id, kind, iid, doc, now)
                counts[kind] += 1
    memories = collections.collection_path("memories", org=org_id)
    for mid, sealed in store.query(memories, limit=None):
        if wanted("memory", mid) and index_memory(
            store, embedder, org_id, mid, sealed, now=now, cipher=cipher
        ):
            counts["memory"] += 1
    counts["episode"] = reindex_episodes(store, embedder, org_id, now=now, cipher=cipher, every=every)
    return counts


def index_memory(
    store: Store,
    embedder: Embedder | None,
    org_id: str,
    mid: str,
    sealed: Doc,
    *,
    now: datetime,
    cipher: MultiFernet | None = None,
) -> bool:
    """Index a person's stored memory (its sealed values opened with ``cipher`` and sealed again
    in its chunks); ``False`` when it has no text or no person."""
    doc = unseal(sealed, cipher)[0]
    if not (str(doc.get("content") or "").strip() and doc.get("user_id")):
        return False
    index_text(
        store,
        embedder,
        org_id,
        source_kind="memory",
        source_id=mid,
        text=str(doc["content"]),
        now=now,
        user_id=str(doc["user_id"]),
        title=doc.get("subject"),
        tags=(str(doc.get("category") or "other"),),
        expires_at=doc.get("expires_at"),
        cipher=cipher,
    )
    return True


def index_source(
    store: Store,
    embedder: Embedder | None,
    org_id: str,
    kind: str,
    iid: str,
    *,
    now: datetime,
    cipher: MultiFernet | None = None,
) -> bool | None:
    """Index one source again from the document it comes from; ``None`` when that document is
    gone (or the kind has none: a fact's chunks are its only copy), ``False`` when it tells
    nothing to index (the index then keeps no chunks of it)."""
    origin = origin_path(org_id, kind, iid)
    doc = store.get(origin) if origin else None
    if doc is None:
        return None
    if kind in KINDS:
        if not str(doc.get("content") or "").strip() or doc.get("active") is False:
            remove_source(store, org_id, kind, iid)
            return False
        _index_item(store, embedder, org_id, kind, iid, doc, now)
        return True
    if kind == "memory":
        return index_memory(store, embedder, org_id, iid, doc, now=now, cipher=cipher)
    return index_episode(store, embedder, org_id, iid, doc, now=now, cipher=cipher)


def origin_path(org_id: str, kind: str, iid: str) -> str | None:
    """The document a source of ``kind`` is indexed from (``None``: a fact, kept only as chunks)."""
    if kind in KINDS:
        return _path(org_id, kind, iid)
    if kind in ("memory", "episode"):
        return collections.path("memories" if kind == "memory" else "episodes", org=org_id, id=iid)
    return None


def read_import(path: Path) -> list[dict[str, Any]]:
    """The items of a file: ``.jsonl`` one JSON object a line (``text``, optional ``title``,
    ``min_level``, ``priority``); any other file one document (its first line the title)."""
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ArgumentError(f"{path}: {exc}") from exc
    if path.suffix != ".jsonl":
        first = raw.strip().splitlines()[0].lstrip("# ").strip() if raw.strip() else None
        return [{"text": raw, "title": first}]
    items = []
    for n, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ArgumentError(f"{path}:{n}: not JSON ({exc.msg})") from exc
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            raise ArgumentError(f'{path}:{n}: an object with a "text" string is needed')
        unknown = set(item) - {"text", "title", "min_level", "priority"}
        if unknown:
            raise ArgumentError(f"{path}:{n}: unknown fields {sorted(unknown)}")
        items.append(item)
    return items


def _index_item(
    store: Store, embedder: Embedder | None, org_id: str, kind: str, iid: str, doc: Doc, now: datetime
) -> None:
    """The item's chunks from its stored document (knowledge keeps its reading level)."""
    index_text(
        store,
        embedder,
        org_id,
        source_kind=kind,
        source_id=iid,
        text=str(doc["content"]),
        now=now,
        min_level=int(doc.get("min_level", 1)) if kind == "knowledge" else 1,
        title=doc.get("title"),
    )


def _path(org_id: str, kind: str, iid: str) -> str:
    return collections.path(COLLECTION[kind], org=org_id, id=iid)


def _listed(kind: str, iid: str, doc: Doc) -> dict[str, Any]:
    return {
        "id": iid,
        "kind": kind,
        "title": doc.get("title"),
        "text": str(doc.get("content", "")),
        "min_level": int(doc.get("min_level", 1)),
        "created_by": doc.get("created_by"),
        "created_at": doc.get("created_at"),
    }


def _write_values(store: Store, org_id: str) -> None:
    """``settings/company.values``: every value's text, oldest first (the context reads it)."""
    values = list_items(store, org_id, "value")
    store.set(f"orgs/{org_id}/settings/company", {"values": "\n".join(v["text"] for v in values)}, merge=True)
