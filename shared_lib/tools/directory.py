"""The organisation directory in the store: users and departments (``orgs/{org}/users``,
``orgs/{org}/departments``). The authorization gate and person resolution read it; the
LLM never supplies a level or a department.

Names the user gave are resolved to exactly one person: 「俺」「自分」「私」 mean the
sender; titles and honorifics are not part of a name (「営業部の山田部長」 is 山田, in 営業部),
and a name is found by its kana reading or romaji too (``person_names``), a department by its
name, a part of it or its ``reading`` (「えいぎょうぶ」 is 営業部); a name that matches
two people (two 田中さん) is a clarification with the candidates as options, never a guess.
A failure is a ``ToolInputError`` with a catalogue key (``tool_error.person_*``): the persona
says it.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict

from shared_lib.ports import Store
from shared_lib.tools import person_names
from shared_lib.tools.registry import ToolInputError

SELF_WORDS = (
    "俺",
    "自分",
    "私",
    "僕",
    "わたし",
    "わたくし",
    "あたし",
    "おれ",
    "ぼく",
    "me",
    "myself",
    "sender",
)
MAX_DEPARTMENT_DEPTH = 20


class Person(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    user_id: str
    name: str
    reading: str | None = None  # kana (「たなか たろう」): found by 「たなか」「タナカ」「Tanaka」
    level: int = 2
    department_id: str | None = None
    email: str | None = None
    chatwork_account_id: str | None = None

    @property
    def task_account_id(self) -> str:
        """The id a task backend knows this person by (ChatWork account id when set)."""
        return self.chatwork_account_id or self.user_id


def get_person(store: Store, org_id: str, user_id: str) -> Person | None:
    doc = store.get(f"orgs/{org_id}/users/{user_id}")
    return Person.model_validate({**doc, "user_id": user_id}) if doc else None


class PersonCache:
    """``get_person`` for the ingress's acknowledgement path: a person found is remembered.

    A webhook from a known person then costs no directory read before the provider gets its
    answer. Only a person found is kept (``ttl`` seconds, at most ``size`` people, the
    oldest dropped first): someone just added to the directory is accepted at once; someone
    removed is still accepted at the door for at most ``ttl`` seconds, and every layer that
    decides (the authorization gate, the tools) reads the directory itself.

    >>> from shared_lib.adapters.memory_store import MemoryStore
    >>> store = MemoryStore(); cache = PersonCache(ttl=30)
    >>> cache.get(store, "acme", "u1") is None
    True
    >>> store.set("orgs/acme/users/u1", {"name": "鈴木"}); cache.get(store, "acme", "u1").name
    '鈴木'
    """

    def __init__(self, ttl: float = 30.0, size: int = 4096, monotonic: Callable[[], float] = time.monotonic):
        self.ttl, self.size, self.monotonic = ttl, size, monotonic
        self._people: OrderedDict[tuple[str, str], tuple[float, Person]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, store: Store, org_id: str, user_id: str) -> Person | None:
        key, now = (org_id, user_id), self.monotonic()
        with self._lock:
            hit = self._people.get(key)
            if hit is not None and now - hit[0] < self.ttl:
                return hit[1]
        person = get_person(store, org_id, user_id)
        with self._lock:
            if person is None:
                self._people.pop(key, None)
            else:
                self._people[key] = (now, person)
                self._people.move_to_end(key)
                while len(self._people) > self.size:
                    self._people.popitem(last=False)
        return person


def list_people(store: Store, org_id: str) -> list[Person]:
    return [
        Person.model_validate({**doc, "user_id": uid}) for uid, doc in store.query(f"orgs/{org_id}/users")
    ]


def clean_name(name: str) -> str:
    """The name without titles, honorifics and the hints around it (「営業部の山田部長」 is 山田)."""
    return person_names.parse(name).name


def is_self(name: str) -> bool:
    return clean_name(name).lower() in SELF_WORDS


def department_names(store: Store, org_id: str) -> dict[str, str]:
    """Each department's display name (``name`` of its document), where it has one."""
    return {d: str(doc["name"]) for d, doc in store.query(f"orgs/{org_id}/departments") if doc.get("name")}


def resolve_person(
    store: Store, org_id: str, name: str, *, sender_id: str, field: str = "assignee_name"
) -> Person:
    """Resolve a name the user gave to exactly one person; ambiguity is an error with options."""
    said = person_names.parse(name)
    if said.name.lower() in SELF_WORDS:
        me = get_person(store, org_id, sender_id)
        if me is None:
            raise ToolInputError("送信者が名簿にいません", key="sender_unknown", field=field)
        return me
    if not said.name:
        raise ToolInputError("担当者の名前が空です", key="person_empty", field=field)
    people = list_people(store, org_id)
    found = [p for p in people if person_names.matches(said.name, p.name, p.reading, exact=True)] or [
        p for p in people if person_names.matches(said.name, p.name, p.reading, exact=False)
    ]
    docs = dict(store.query(f"orgs/{org_id}/departments")) if len(found) > 1 or said.hints else {}
    departments = {d: str(doc["name"]) for d, doc in docs.items() if doc.get("name")}
    found = _narrowed(found, said.hints, {d: _department_forms(d, doc) for d, doc in docs.items()})
    if not found:
        raise ToolInputError(
            f"「{said.name}」さんが見つかりません", key="person_not_found", field=field, name=said.name
        )
    if len(found) > 1:
        ordered = sorted(found, key=lambda p: (p.name, p.department_id or ""))
        raise ToolInputError(
            f"「{said.name}」さんが{len(found)}人います",
            key="person_ambiguous" if len(found) == 2 else "person_ambiguous_many",
            field=field,
            options=_labels(ordered, departments),
            name=said.name,
            count=len(found),
            choices=_choices(ordered, departments),
        )
    return found[0]


def _narrowed(
    found: list[Person], hints: tuple[str, ...], departments: dict[str, tuple[str, ...]]
) -> list[Person]:
    """The candidates a hint (「営業部の」「（経理）」「えいぎょうの」) points at; all of them when it
    points at none. ``departments``: each one's forms (``_department_forms``)."""
    for hint in hints:
        key = person_names.kana_key(hint).removesuffix("部").removesuffix("課")
        if not key:
            continue
        hit = [
            p
            for p in found
            if p.department_id
            and any(
                key in form
                for form in departments.get(p.department_id, (person_names.kana_key(p.department_id),))
            )
        ]
        if hit:
            return hit
    return found


def _labels(people: list[Person], departments: dict[str, str] | None = None) -> list[str]:
    """Names to choose from; namesakes (同姓同名) are told apart by department."""
    names = [p.name for p in people]
    depts = departments or {}
    return [
        p.name
        if names.count(p.name) == 1
        else f"{p.name}（{depts.get(p.department_id or '') or p.department_id or p.user_id}）"
        for p in people
    ]


def _choices(people: list[Person], departments: dict[str, str]) -> str:
    """The candidates as one phrase of a sentence: 「営業部の田中太郎さんと経理部の田中花子さん」."""
    named = [
        f"{dept}の{p.name}さん" if (dept := departments.get(p.department_id or "")) else f"{p.name}さん"
        for p in people
    ]
    return "と".join(named) if len(named) == 2 else "、".join(named)


def department_doc(store: Store, org_id: str, department_id: str) -> dict[str, Any] | None:
    """The department's document (``parent``, ``name``), ``None`` when there is no such department."""
    return store.get(f"orgs/{org_id}/departments/{department_id}")


def department_tree(store: Store, org_id: str, department_id: str) -> set[str]:
    """The department and every department below it (the ``parent`` links)."""
    parents = {dept: doc.get("parent") for dept, doc in store.query(f"orgs/{org_id}/departments")}
    return _subtree(parents, department_id)


def _subtree(parents: dict[str, Any], department_id: str) -> set[str]:
    tree = {department_id}
    for _ in range(MAX_DEPARTMENT_DEPTH):
        grown = tree | {d for d, parent in parents.items() if parent in tree}
        if grown == tree:
            break
        tree = grown
    return tree


def resolve_department(store: Store, org_id: str, said: str, *, field: str = "department") -> str:
    """The one department a name the user gave means (「営業部」「営業部のみんな」「営業」, or its
    id): the name said as it is, else the one name that holds it (or the one of those that holds
    the others: 「営業」 is 営業部, not its 東日本営業課); an error otherwise (with the candidates).
    Costs one query."""
    docs = dict(store.query(f"orgs/{org_id}/departments"))
    names = {d: str(doc.get("name") or d) for d, doc in docs.items()}
    parents = {d: doc.get("parent") for d, doc in docs.items()}
    key = person_names.kana_key(said).removesuffix("のみんな").removesuffix("の皆さん")
    if not key:
        raise ToolInputError("部署の名前が空です", key="department_empty", field=field)
    # a department is named by its name, its id, or its reading in kana (「えいぎょうぶ」 is 営業部)
    forms = {d: _department_forms(d, doc) for d, doc in docs.items()}
    exact = [d for d, said_as in forms.items() if key in said_as]
    if len(exact) == 1:
        return exact[0]
    stem = key.removesuffix("部").removesuffix("課") or key
    found = (
        exact
        or [d for d, said_as in forms.items() if any(key in f for f in said_as)]
        or [d for d, said_as in forms.items() if any(stem in f for f in said_as)]
    )
    if not found:
        raise ToolInputError(
            f"部署「{said}」が見つかりません", key="department_not_found", field=field, name=said
        )
    # 「営業」 names 営業部 and the 東日本営業課 under it: the one that holds the others is meant
    holding = [d for d in found if set(found) <= _subtree(parents, d)]
    found = holding if len(holding) == 1 else found
    if len(found) > 1:
        options = sorted(names[d] for d in found)
        raise ToolInputError(
            f"「{said}」に当たる部署が{len(found)}つあります",
            key="department_ambiguous",
            field=field,
            name=said,
            options=options,
            choices="と".join(f"「{o}」" for o in options),
        )
    return found[0]


def _department_forms(department_id: str, doc: dict[str, Any]) -> tuple[str, ...]:
    """The comparison forms a department is named by: its name, its reading, its id."""
    said = (doc.get("name"), doc.get("reading"), department_id)
    return tuple(person_names.kana_key(str(s)) for s in said if s)


def department_members(store: Store, org_id: str, department_id: str) -> list[Person]:
    tree = department_tree(store, org_id, department_id)
    return [p for p in list_people(store, org_id) if p.department_id in tree]


def seed_directory(
    store: Store,
    org_id: str,
    people: list[dict[str, Any]],
    departments: dict[str, str | None],
    names: dict[str, str] | None = None,
    readings: dict[str, str] | None = None,
) -> None:
    """Write a directory (demo, tests, local stack); ``names`` are the departments' display names,
    ``readings`` their kana (「えいぎょうぶ」)."""
    for dept_id, parent in departments.items():
        doc: dict[str, Any] = {"parent": parent}
        if names and dept_id in names:
            doc["name"] = names[dept_id]
        if readings and dept_id in readings:
            doc["reading"] = readings[dept_id]
        store.set(f"orgs/{org_id}/departments/{dept_id}", doc)
    for p in people:
        data = {k: v for k, v in p.items() if k != "user_id"}
        store.set(f"orgs/{org_id}/users/{p['user_id']}", data)
