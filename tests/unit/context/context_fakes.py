"""Fakes for the Context Builder tests: a store whose reads fail for one source, and an
organisation with something in every source."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from shared_lib.context import ContextInput
from shared_lib.context.history import append_message, conversation_path
from shared_lib.errors import StoreUnavailable
from shared_lib.memory.index import index_text
from shared_lib.ports import Store
from shared_lib.tools.directory import seed_directory
from shared_lib.tools.task_backend import StoreTaskBackend

ORG = "acme"
OTHER_ORG = "globex"
ROOM = "room-1"
USER = "u1"
KEY = f"{ORG}/{ROOM}/{USER}"
NOW = datetime(2026, 1, 28, 3, 0, tzinfo=UTC)


def context_input(
    store: Store, text: str, *, org: str = ORG, user: str = USER, user_name: str | None = None
) -> ContextInput:
    """What the context layer gives the builder for ``user``'s turn in ``ROOM`` of ``org``."""
    return ContextInput(
        store=store,
        tasks=StoreTaskBackend(store),
        org_id=org,
        user_id=user,
        room_id=ROOM,
        conversation_key=f"{org}/{ROOM}/{user}",
        text=text,
        now=NOW,
        user_name=user_name,
    )


# The read each source makes (operation, path pattern): failing it fails that source.
SOURCE_READS: dict[str, tuple[str, str]] = {
    "session": ("get", r"/sessions/[^/]+$"),
    "user": ("get", r"/users/[^/]+$"),
    "recent_messages": ("query", r"/messages$"),
    "summary": ("get", r"/conversations/[^/]+$"),
    "preferences": ("query", r"/memories$"),
    "persons": ("query", r"/users$"),
    "departments": ("query", r"/departments$"),
    "tasks": ("query", r"/tasks$"),
    "goals": ("query", r"/goals$"),
    "teachings": ("query", r"/teachings$"),
    "company_values": ("get", r"/settings/company$"),
    "knowledge": ("get", r"/memory_stats/[^/]+$"),  # the hybrid search's first read (memory.search)
    "episodes": ("get", r"/memory_stats/[^/]+$"),  # the same search, of episodes: one read fails both
    "agent_state": ("get", r"/agent_states/[^/]+$"),
    "persona_ext": ("get", r"/persona_ext/current$"),
}


class FaultyStore:
    """A ``Store`` whose reads matching ``fail_source`` raise ``StoreUnavailable``.

    Only reads made by the Context Builder's source threads fail (their names start with
    ``context``), so the rest of the pipeline still sees a working store: the fault is the
    context source's, as when one backing table is down.
    """

    def __init__(self, inner: Store, fail_source: str | None = None, *, everywhere: bool = False) -> None:
        self.inner = inner
        self.fail_source = fail_source
        self.everywhere = everywhere

    def _check(self, op: str, path: str) -> None:
        if self.fail_source is None or not threading.current_thread().name.startswith("context"):
            return
        sources = SOURCE_READS if self.everywhere else {self.fail_source: SOURCE_READS[self.fail_source]}
        for name, (wanted_op, pattern) in sources.items():
            if op == wanted_op and re.search(pattern, path):
                raise StoreUnavailable(f"injected: {name} is down")

    def get(self, path: str) -> dict[str, Any] | None:
        self._check("get", path)
        return self.inner.get(path)

    def get_many(self, paths: Sequence[str]) -> dict[str, dict[str, Any] | None]:
        # a batch fails whole when one of its documents cannot be read (the builder then reads
        # each on its own, so only the source whose document is down fails)
        for path in paths:
            self._check("get", path)
        return self.inner.get_many(paths)

    def query(
        self,
        collection: str,
        *,
        where: Sequence[tuple[str, Any, Any]] = (),
        order_by: str | None = None,
        descending: bool = False,
        limit: int | None = None,
        group: bool = False,
    ) -> list[tuple[str, Any]]:
        self._check("query", collection)
        return self.inner.query(
            collection, where=where, order_by=order_by, descending=descending, limit=limit, group=group
        )

    def set(self, path: str, data: dict[str, Any], *, merge: bool = False) -> None:
        self.inner.set(path, data, merge=merge)

    def set_many(self, writes: Sequence[tuple[str, dict[str, Any], bool]]) -> None:
        self.inner.set_many(writes)

    def create(self, path: str, data: dict[str, Any]) -> bool:
        return self.inner.create(path, data)

    def delete(self, path: str) -> None:
        self.inner.delete(path)

    def run_transaction(self, fn: Callable[[Any], Any]) -> Any:
        return self.inner.run_transaction(fn)


def seed_org(store: Store, org: str = ORG, *, marker: str = "") -> None:
    """Something in every source (``marker`` tags text so tests can tell organisations apart)."""
    seed_directory(
        store,
        org,
        [
            {"user_id": USER, "name": "鈴木一郎", "level": 2, "department_id": "d1"},
            {"user_id": "u2", "name": "田中太郎", "level": 2, "department_id": "d1"},
            {"user_id": "u3", "name": "山田次郎", "level": 4, "department_id": "d2"},
        ],
        {"d1": None, "d2": None},
    )
    store.set(f"orgs/{org}/teachings/t1", {"content": f"お客様第一{marker}", "priority": 10, "active": True})
    store.set(f"orgs/{org}/teachings/t2", {"content": "古い教え", "priority": 1, "active": False})
    store.set(f"orgs/{org}/settings/company", {"values": f"誠実・挑戦・感謝{marker}"})
    store.set(
        f"orgs/{org}/knowledge/k1",
        {"title": f"経費精算規程{marker}", "content": "経費精算は月末までに申請する。"},
    )
    # what the knowledge source searches: the document's chunks (memory.ingest writes both)
    index_text(
        store,
        None,
        org,
        source_kind="knowledge",
        source_id="k1",
        text="経費精算は月末までに申請する。",
        title=f"経費精算規程{marker}",
        now=NOW,
    )
    store.set(
        f"orgs/{org}/goals/g1",
        {
            "user_id": USER,
            "title": f"売上目標{marker}",
            "progress": 40,
            "status": "active",
            "deadline": "2026-03-31",
        },
    )
    store.set(
        f"orgs/{org}/tasks/t-1",
        {
            "body": f"見積書を作成{marker}",
            "assignee_id": USER,
            "status": "open",
            "limit_date": "2026-01-29",
            "room_id": ROOM,
        },
    )
    store.set(
        f"orgs/{org}/memories/m1",
        {
            "user_id": USER,
            "category": "preference",
            "subject": "コーヒー",
            "content": f"ブラック派{marker}",
            "created_at": NOW,
        },
    )
    store.set(conversation_path(org, f"{org}/{ROOM}/{USER}"), {"summary": f"先週は見積の話をした{marker}"})
    for i in range(12):
        append_message(
            store,
            org,
            f"{org}/{ROOM}/{USER}",
            f"01OLD{i:02d}-0-in",
            role="user",
            text=f"過去の発言{i}{marker}",
            at=NOW - timedelta(minutes=60 - i),
            user_id=USER,
        )
