"""The one catalogue of Firestore collections (``config/collections.json``).

Each collection has a name, a document path template (collection ids literal, document
ids ``{placeholders}``), the module that owns it, and the timestamp field Firestore's
TTL policy deletes its documents by (``None``: they never expire). ``retention: "org"``
marks personal data: its writers set the TTL field to the write time plus the
organisation's retention (``Settings.retention``), so a document lives that long after
its last change. Code builds paths
from it; ``terraform/modules/firestore`` derives its TTL policies from the same file,
one per collection group (the template's last collection id).

>>> path("receipts", org="acme", id="T1-0-0")
'orgs/acme/receipts/T1-0-0'
>>> collection_path("receipts", org="acme")
'orgs/acme/receipts'
>>> CATALOGUE["receipts"].group, CATALOGUE["receipts"].ttl_field
('receipts', 'expires_at')
>>> of_path("orgs/acme/conversations/c1/messages/m1").name
'messages'
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, model_validator

COLLECTIONS_FILE = Path(__file__).parent / "config" / "collections.json"
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


class Collection(BaseModel):
    """One entry of the catalogue."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    path: str
    owner: str
    ttl_field: str | None
    description: str
    retention: Literal["org"] | None = None

    @model_validator(mode="after")
    def _template_parses(self) -> Collection:
        if self.retention is not None and self.ttl_field is None:
            raise ValueError(f"{self.name}: a retention needs a ttl_field to expire by")
        parts = self.path.split("/")
        if len(parts) % 2 or any(not p for p in parts):
            raise ValueError(f"{self.name}: {self.path!r} is not a document path template")
        for i, part in enumerate(parts):
            placeholder = _PLACEHOLDER.fullmatch(part)
            if i % 2 == 0 and not _IDENT.fullmatch(part):
                raise ValueError(f"{self.name}: collection id {part!r} must be literal")
            if i % 2 == 1 and not (placeholder or _IDENT.fullmatch(part)):
                raise ValueError(f"{self.name}: document id {part!r} is neither literal nor {{name}}")
        if len(self.placeholders) != len(set(self.placeholders)):
            raise ValueError(f"{self.name}: a placeholder appears twice in {self.path!r}")
        if not _PLACEHOLDER.fullmatch(parts[-1]):
            raise ValueError(f"{self.name}: the document id of {self.path!r} must be a placeholder")
        return self

    @property
    def segments(self) -> list[str]:
        return self.path.split("/")

    @cached_property
    def placeholders(self) -> list[str]:
        return _PLACEHOLDER.findall(self.path)

    @cached_property
    def _templates(self) -> dict[bool, tuple[frozenset[str], str]]:
        """For a document and for its collection: the placeholders it needs and its path as a
        format string (the template's placeholders are ``str.format``'s own fields)."""
        return {
            True: (frozenset(self.placeholders), self.path),
            False: (frozenset(self.placeholders[:-1]), "/".join(self.segments[:-1])),
        }

    @property
    def group(self) -> str:
        """The collection group a TTL policy or group query names: the last collection id."""
        return self.segments[-2]

    def matches(self, doc_path: str) -> bool:
        """Whether ``doc_path`` is a document of this collection."""
        parts = doc_path.strip("/").split("/")
        if len(parts) != len(self.segments):
            return False
        return all(
            bool(part) and "/" not in part and (_PLACEHOLDER.fullmatch(t) is not None or t == part)
            for t, part in zip(self.segments, parts, strict=True)
        )

    def build(self, values: Mapping[str, str], *, document: bool = True) -> str:
        """The document path (or, with ``document=False``, its collection's path)."""
        needed, template = self._templates[document]
        if values.keys() != needed:
            missing, extra = needed - set(values), set(values) - needed
            raise KeyError(f"{self.name}: missing {sorted(missing)}, unexpected {sorted(extra)}")
        for key, value in values.items():
            if not value or "/" in value:
                raise ValueError(f"{self.name}: {key}={value!r} is not a document id")
        return template.format_map(values)


class Catalogue(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    schema_version: int
    description: str
    collections: list[Collection]

    @model_validator(mode="after")
    def _unique(self) -> Catalogue:
        for attribute in ("name", "path"):
            values = [getattr(c, attribute) for c in self.collections]
            if len(values) != len(set(values)):
                raise ValueError(f"duplicate collection {attribute} in the catalogue")
        for group, fields in self._ttl_fields_by_group().items():
            if len(fields) > 1:
                raise ValueError(f"collection group {group!r} has conflicting TTL fields {sorted(fields)}")
        return self

    def _ttl_fields_by_group(self) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for c in self.collections:
            if c.ttl_field is not None:
                out.setdefault(c.group, set()).add(c.ttl_field)
        return out

    @cached_property
    def by_name(self) -> dict[str, Collection]:
        return {c.name: c for c in self.collections}

    def ttl_policies(self) -> dict[str, str]:
        """Collection group -> TTL field: what Terraform must declare."""
        return {group: next(iter(fields)) for group, fields in self._ttl_fields_by_group().items()}

    def of_path(self, doc_path: str) -> Collection | None:
        """The catalogue entry a concrete document path belongs to (``None``: uncatalogued)."""
        return next((c for c in self.collections if c.matches(doc_path)), None)


def load_catalogue(path: Path = COLLECTIONS_FILE) -> Catalogue:
    return Catalogue.model_validate(json.loads(path.read_text(encoding="utf-8")))


_CATALOGUE = load_catalogue()
CATALOGUE: dict[str, Collection] = _CATALOGUE.by_name


def path(name: str, **values: str) -> str:
    """The path of one document of collection ``name``; every placeholder must be given."""
    return CATALOGUE[name].build(values)


def collection_path(name: str, **values: str) -> str:
    """The path of collection ``name`` (for queries): every placeholder but the document id."""
    return CATALOGUE[name].build(values, document=False)


def of_path(doc_path: str) -> Collection | None:
    return _CATALOGUE.of_path(doc_path)


def ttl_policies() -> dict[str, str]:
    return _CATALOGUE.ttl_policies()


def retained(doc_path: str) -> bool:
    """Whether ``doc_path`` is personal data kept for the organisation's retention."""
    entry = of_path(doc_path)
    return entry is not None and entry.retention == "org"


def conversation_id(conversation_key: str) -> str:
    """The document id of a conversation (its key holds slashes and personal ids: hashed)."""
    return hashlib.sha256(conversation_key.encode()).hexdigest()[:32]


def session_path(org_id: str, conversation_key: str) -> str:
    return path("sessions", org=org_id, id=conversation_id(conversation_key))
