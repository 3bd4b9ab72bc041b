"""The organisation directory as the Authorization Gate reads it (seed 000 §6.4).

``Directory`` is a small port: a user (level, department, classification) and a
department (parent, classification). ``StoreDirectory`` reads ``orgs/{org}/users/{id}``
and ``orgs/{org}/departments/{id}``; ``MemoryDirectory`` is its in-memory peer (the policy
simulator, tests). Anything unreadable — a store error, a malformed level, a cycle in the
department tree — raises ``DirectoryUnavailable``, which the gate turns into a denial.

>>> d = MemoryDirectory.from_data(users={"u1": {"level": 3, "department_id": "sales"}},
...                               departments={"sales": {"parent": "hq"}, "hq": {"parent": None}})
>>> d.ancestors("sales")
['sales', 'hq']
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from shared_lib.errors import CharterError
from shared_lib.ports import Store

MAX_DEPTH = 64
TOP_SECRET = "top_secret"


class DirectoryUnavailable(CharterError):
    """The directory could not be read or is not well formed (the gate denies)."""


@dataclass(frozen=True)
class DirectoryUser:
    user_id: str
    level: int
    department_id: str | None = None
    classification: str | None = None


@dataclass(frozen=True)
class Department:
    department_id: str
    parent: str | None = None
    classification: str | None = None


class Directory(Protocol):
    def user(self, user_id: str) -> DirectoryUser | None:
        """The user, ``None`` when not in the directory; raises ``DirectoryUnavailable``."""
        ...

    def department(self, department_id: str) -> Department | None:
        """The department, ``None`` when unknown; raises ``DirectoryUnavailable``."""
        ...


def _user(user_id: str, doc: Mapping[str, Any]) -> DirectoryUser:
    level = doc.get("level")
    if isinstance(level, bool) or not isinstance(level, int) or not 1 <= level <= 6:
        raise DirectoryUnavailable(f"user {user_id}: level {level!r} is not a level 1-6")
    dept = doc.get("department_id")
    return DirectoryUser(
        user_id=user_id,
        level=level,
        department_id=str(dept) if dept else None,
        classification=_text(doc.get("classification")),
    )


def _department(department_id: str, doc: Mapping[str, Any]) -> Department:
    parent = doc.get("parent")
    if parent is not None and not isinstance(parent, str):
        raise DirectoryUnavailable(f"department {department_id}: parent {parent!r} is not an id")
    return Department(
        department_id=department_id, parent=parent or None, classification=_text(doc.get("classification"))
    )


def _text(value: Any) -> str | None:
    return str(value) if value not in (None, "") else None


class _Tree(ABC):
    """Department-tree walks shared by every directory; subclasses read users and departments."""

    @abstractmethod
    def user(self, user_id: str) -> DirectoryUser | None: ...

    @abstractmethod
    def department(self, department_id: str) -> Department | None: ...

    def ancestors(self, department_id: str) -> list[str]:
        """``department_id`` then its parents up to the root; unknown ids end the chain."""
        chain = [department_id]
        current = self.department(department_id)
        while current is not None and current.parent is not None:
            if current.parent in chain:
                raise DirectoryUnavailable(f"department tree has a cycle at {current.parent}")
            if len(chain) > MAX_DEPTH:
                raise DirectoryUnavailable("department tree is deeper than allowed")
            chain.append(current.parent)
            current = self.department(current.parent)
        return chain

    def top_secret(self, department_id: str | None, marker: str = TOP_SECRET) -> bool:
        """Whether the department or any department above it is marked top secret."""
        if department_id is None:
            return False
        for dept_id in self.ancestors(department_id):
            dept = self.department(dept_id)
            if dept is not None and dept.classification == marker:
                return True
        return False


class StoreDirectory(_Tree):
    def __init__(self, store: Store, org_id: str) -> None:
        self.store = store
        self.org_id = org_id

    def _read(self, path: str) -> dict[str, Any] | None:
        try:
            return self.store.get(path)
        except Exception as exc:  # any store failure: the gate must deny, never guess
            raise DirectoryUnavailable(f"{path}: {type(exc).__name__}") from exc

    def user(self, user_id: str) -> DirectoryUser | None:
        doc = self._read(f"orgs/{self.org_id}/users/{user_id}")
        return _user(user_id, doc) if doc is not None else None

    def department(self, department_id: str) -> Department | None:
        doc = self._read(f"orgs/{self.org_id}/departments/{department_id}")
        return _department(department_id, doc) if doc is not None else None


class MemoryDirectory(_Tree):
    def __init__(self, users: Mapping[str, DirectoryUser], departments: Mapping[str, Department]) -> None:
        self._users = dict(users)
        self._departments = dict(departments)

    @classmethod
    def from_data(
        cls, *, users: Mapping[str, Mapping[str, Any]], departments: Mapping[str, Mapping[str, Any]]
    ) -> MemoryDirectory:
        return cls(
            {uid: _user(uid, doc) for uid, doc in users.items()},
            {did: _department(did, doc) for did, doc in departments.items()},
        )

    def user(self, user_id: str) -> DirectoryUser | None:
        return self._users.get(user_id)

    def department(self, department_id: str) -> Department | None:
        return self._departments.get(department_id)


def walkable(directory: Directory) -> _Tree:
    """A directory with the tree walks (wraps a bare ``Directory`` implementation)."""
    if isinstance(directory, _Tree):
        return directory
    return _Wrapped(directory)


class _Wrapped(_Tree):
    def __init__(self, inner: Directory) -> None:
        self.inner = inner

    def user(self, user_id: str) -> DirectoryUser | None:
        return self.inner.user(user_id)

    def department(self, department_id: str) -> Department | None:
        return self.inner.department(department_id)
