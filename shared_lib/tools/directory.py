"""The organisation directory in the store: users and departments (``orgs/{org}/users``,
``orgs/{org}/departments``). The authorization gate and person resolution read it; the
LLM never supplies a level or a department."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from shared_lib.ports import Store
from shared_lib.tools.registry import ToolInputError

SELF_WORDS = ("俺", "自分", "私", "僕", "わたし", "me", "myself")


class Person(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    user_id: str
    name: str
    level: int = 2
    department_id: str | None = None
    email: str | None = None


def get_person(store: Store, org_id: str, user_id: str) -> Person | None:
    doc = store.get(f"orgs/{org_id}/users/{user_id}")
    return Person.model_validate({"user_id": user_id, **doc}) if doc else None


def list_people(store: Store, org_id: str) -> list[Person]:
    return [Person.model_validate({"user_id": uid, **doc}) for uid, doc in store.query(f"orgs/{org_id}/users")]


def resolve_person(store: Store, org_id: str, name: str, *, sender_id: str) -> Person:
    """Resolve a name the user gave to exactly one person; ambiguity is an error with options."""
    cleaned = name.strip().removesuffix("さん").removesuffix("くん").removesuffix("様").strip()
    if cleaned in SELF_WORDS:
        me = get_person(store, org_id, sender_id)
        if me is None:
            raise ToolInputError("送信者が名簿にいません", field="assignee_name")
        return me
    people = list_people(store, org_id)
    exact = [p for p in people if p.name == cleaned]
    found = exact or [p for p in people if cleaned and cleaned in p.name]
    if not found:
        raise ToolInputError(f"「{cleaned}」さんが見つかりません", field="assignee_name")
    if len(found) > 1:
        raise ToolInputError(f"「{cleaned}」さんが複数います", field="assignee_name",
                             options=[p.name for p in found])
    return found[0]


def seed_directory(store: Store, org_id: str, people: list[dict[str, Any]],
                   departments: dict[str, str | None]) -> None:
    """Write a directory (demo, tests, local stack)."""
    for dept_id, parent in departments.items():
        store.set(f"orgs/{org_id}/departments/{dept_id}", {"parent": parent})
    for p in people:
        data = {k: v for k, v in p.items() if k != "user_id"}
        store.set(f"orgs/{org_id}/users/{p['user_id']}", data)
