"""The Context Builder's sources (seed 000 §6.1 5.1.2), one small function each.

Each source has the seed's priority (1 highest) and a Truth rank (seed 000 §8.2 "Truth
順位": 1 real-time API, 2 database, 3 settings and specifications, 4 conversation
memory; 5, guessing, is forbidden). Sources read through an organisation-scoped,
read-only store, so a context can hold nothing of another organisation.

>>> [s.name for s in default_sources()][:3]
['session', 'user', 'recent_messages']
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from shared_lib import collections
from shared_lib.adapters.doc_copy import copy_doc
from shared_lib.context.history import conversation_path, conversation_summary, recent_messages
from shared_lib.features.agent_state.store import agent_state_path, load_agent_state
from shared_lib.features.persona_learning.store import ext_path, load_ext
from shared_lib.memory.index import df_name, stats_path
from shared_lib.memory.keyword import bucket, query_terms
from shared_lib.ports import Embedder, EmbedKind, Store, Vector
from shared_lib.state.local_only import local_only_path
from shared_lib.state.session import load_session
from shared_lib.tools.directory import clean_name, department_names, get_person, list_people
from shared_lib.tools.handlers.memory import own_memories, search_episodes, search_knowledge
from shared_lib.tools.task_backend import TaskBackend

T = TypeVar("T")
TRUTH_LABELS = {1: "リアルタイムAPI", 2: "DB（正規データ）", 3: "設定・仕様", 4: "会話の記憶"}


class OnceEmbedder:
    """An embedder that embeds a text once per turn: the knowledge and episodes sources search
    with the same query, in parallel (the second waits for the first's vector instead of paying
    the model again). Cost: one dict and one lock per built context."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.name, self.dimensions = inner, inner.name, inner.dimensions
        self._lock = threading.Lock()
        self._seen: dict[tuple[str, EmbedKind], Vector] = {}

    def embed(self, texts: Sequence[str], *, kind: EmbedKind) -> list[Vector]:
        with self._lock:
            missing = [t for t in dict.fromkeys(texts) if (t, kind) not in self._seen]
            if missing:
                self._seen.update(
                    zip(((t, kind) for t in missing), self.inner.embed(missing, kind=kind), strict=True)
                )
            return [self._seen[(t, kind)] for t in texts]


class OrgLists:
    """An organisation's lists that change at an administrator's pace (its people, its
    departments' names, its CEO's teachings), kept per process for ``ttl`` seconds: the context
    reads them on every turn to give the model names and teachings, and a query a turn for each
    cost two round trips.

    Why it may be stale, and for how long: someone added to the directory, or a teaching added or
    switched off, reaches the prompt within ``ttl`` (the flags' refresh interval,
    ``CHARTER_FLAGS_TTL``, 10 s by default; 0 keeps nothing). Nothing that decides reads these:
    the authorization gate and the tools read a person's level and department from the directory
    itself on every turn, so a stale list changes what the model is told, never what is allowed.
    A failed fetch is not kept (the source fails as before). Cost: one list per organisation and
    name in each process, at most ``size`` of them (the oldest dropped first).

    >>> lists, calls = OrgLists(ttl=30, monotonic=lambda: 0.0), []
    >>> lists.get("acme", "people", lambda: calls.append(1) or ["鈴木"])
    ['鈴木']
    >>> lists.get("acme", "people", lambda: calls.append(1) or ["鈴木"]), len(calls)
    (['鈴木'], 1)
    """

    def __init__(self, ttl: float = 10.0, size: int = 1024, monotonic: Callable[[], float] = time.monotonic):
        self.ttl, self.size, self.monotonic = ttl, size, monotonic
        self._kept: OrderedDict[tuple[str, str], tuple[float, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, org_id: str, name: str, fetch: Callable[[], T]) -> T:
        key, now = (org_id, name), self.monotonic()
        with self._lock:
            hit = self._kept.get(key)
            if hit is not None and now - hit[0] < self.ttl:
                kept: T = copy_doc(hit[1])  # a source may sort or trim what it is given
                return kept
        value = fetch()
        if self.ttl > 0:
            with self._lock:
                self._kept[key] = (now, copy_doc(value))
                self._kept.move_to_end(key)
                while len(self._kept) > self.size:
                    self._kept.popitem(last=False)
        return value


@dataclass(frozen=True)
class SourceRequest:
    store: Store  # organisation-scoped and read-only
    tasks: TaskBackend
    org_id: str
    user_id: str
    room_id: str
    conversation_key: str
    text: str
    now: datetime
    recent_limit: int = 10
    knowledge_limit: int = 5
    knowledge_triggers: tuple[str, ...] = ()
    embedder: Embedder | None = None
    episodes_limit: int = 3
    lists: OrgLists | None = None  # the process's lists (``ContextBuilder``); None reads each time
    # what the context layer knows before any read (``ContextInput``): the fast path answers the
    # turn from the catalogue; the text reads as an answer to a confirmation (「はい」, 「2」)
    greeting: bool = False
    reads_as_answer: bool = False

    def kept(self, name: str, fetch: Callable[[], T]) -> T:
        """``fetch()``, or the process's copy of it (``OrgLists``)."""
        return fetch() if self.lists is None else self.lists.get(self.org_id, name, fetch)


@dataclass(frozen=True)
class SourceSpec:
    name: str
    priority: int  # seed 5.1.2: 1 (highest) .. 4
    truth: int  # seed §8.2 Truth order: 1 (real-time API) .. 4 (memory)
    fetch: Callable[[SourceRequest], Any]
    # reads only documents ``known_documents`` names: answered from the one batch, so the
    # builder runs it in its own thread once the batch is held (``ContextBuilder._fetch``)
    known: bool = False


def _session(r: SourceRequest) -> dict[str, Any]:
    return load_session(r.store, r.org_id, r.conversation_key, r.now)


def _agent_state(r: SourceRequest) -> dict[str, Any]:
    return load_agent_state(r.store, r.org_id, r.conversation_key)


def _user(r: SourceRequest) -> dict[str, Any] | None:
    me = get_person(r.store, r.org_id, r.user_id)
    return me.model_dump(include={"user_id", "name", "level", "department_id"}) if me else None


def _recent(r: SourceRequest) -> list[dict[str, Any]]:
    return [
        {"role": m.get("role"), "text": str(m.get("text", "")), "at": m.get("at")}
        for m in recent_messages(r.store, r.org_id, r.conversation_key, r.recent_limit)
    ]


def _summary(r: SourceRequest) -> str:
    return conversation_summary(r.store, r.org_id, r.conversation_key)


def _preferences(r: SourceRequest) -> list[dict[str, Any]]:
    return [
        {"subject": d.get("subject"), "content": d.get("content")}
        for _, d in own_memories(r.store, r.org_id, r.user_id, "preference")[:20]
    ]


def _persons(r: SourceRequest) -> list[dict[str, Any]]:
    people = r.kept(
        "people",
        lambda: [
            {"name": p.name, "user_id": p.user_id, "department_id": p.department_id}
            for p in list_people(r.store, r.org_id)
        ],
    )
    me = next((p for p in people if p["user_id"] == r.user_id), None)

    def relevance(p: dict[str, Any]) -> tuple[int, str]:
        name = p["name"]
        named = clean_name(name) in r.text or (len(name) >= 2 and name[:2] in r.text)
        same_team = me is not None and p["department_id"] == me["department_id"]
        return (0 if named else 1 if same_team else 2, name)

    return sorted((p for p in people if p["user_id"] != r.user_id), key=relevance)


def _departments(r: SourceRequest) -> dict[str, str]:
    """Each department's name by its id: people say 「営業部」, the team views take ``d-sales``,
    so the model is shown both (kept per process like the people: an administrator's pace)."""
    return r.kept("departments", lambda: department_names(r.store, r.org_id))


def _tasks(r: SourceRequest) -> list[dict[str, Any]]:
    me = get_person(r.store, r.org_id, r.user_id)
    account = me.task_account_id if me else r.user_id
    return [t.public() for t in r.tasks.list(r.org_id, room_id=r.room_id, assignee_ids=[account], limit=20)]


def _goals(r: SourceRequest) -> list[dict[str, Any]]:
    docs = r.store.query(f"orgs/{r.org_id}/goals", where=[("user_id", "==", r.user_id)], limit=50)
    goals = [
        {
            "goal_id": gid,
            "title": d.get("title"),
            "progress": d.get("progress", 0),
            "deadline": d.get("deadline"),
            "status": d.get("status"),
        }
        for gid, d in docs
        if d.get("status") in ("active", "draft")
    ]
    return sorted(goals, key=lambda g: (g["status"] != "active", str(g["deadline"] or "9999")))


def _teachings(r: SourceRequest) -> list[dict[str, Any]]:
    docs = r.kept(
        "teachings",
        lambda: [
            d
            for _, d in r.store.query(f"orgs/{r.org_id}/teachings", where=[("active", "==", True)], limit=50)
        ],
    )
    items = [
        {"content": d.get("content"), "priority": int(d.get("priority", 0))} for d in docs if d.get("content")
    ]
    return sorted(items, key=lambda t: -t["priority"])


def _company_values(r: SourceRequest) -> str:
    doc = r.store.get(f"orgs/{r.org_id}/settings/company") or {}
    return str(doc.get("values") or "")


def wants_knowledge(text: str, triggers: tuple[str, ...]) -> bool:
    return any(t in text for t in triggers)


def _persona_ext(r: SourceRequest) -> dict[str, Any]:
    return load_ext(r.store, r.org_id)


def answered_without_recall(r: SourceRequest) -> bool:
    """Whether no model reads what the turn would recall: a greeting the fast path answers from
    the catalogue, or an answer to the confirmation the conversation waits on, which the state
    answers (seed 000 §5.1.7: 「はい」 runs the action, 「いいえ」 drops it). Its search would cost
    an embedding (a model call in the cloud, 17–40 ms of CPU with the local one) and a round trip
    for nothing. Only a text that reads as an answer looks at the session (the batch's document:
    no round trip of its own), so a question's search starts at once, beside the other sources."""
    if r.greeting:
        return True
    if not r.reads_as_answer:
        return False
    return bool(load_session(r.store, r.org_id, r.conversation_key, r.now).get("pending_action"))


def _knowledge(r: SourceRequest) -> list[dict[str, Any]] | None:
    if not wants_knowledge(r.text, r.knowledge_triggers) or answered_without_recall(r):
        return None  # on demand only: not asked for
    return search_knowledge(
        r.store, r.org_id, r.text, r.knowledge_limit, embedder=r.embedder, user_id=r.user_id
    )


def _episodes(r: SourceRequest) -> list[dict[str, Any]] | None:
    """What happened that the turn's text is about (seed 001 §22.6): the nearest episodes the
    speaker may read, each with when. An organisation with no episode reads one statistics
    document and stops; otherwise one hybrid search, which runs beside the other sources.
    ``None`` (skipped) for a turn no model answers (``answered_without_recall``)."""
    if not r.text.strip():
        return []
    if answered_without_recall(r):
        return None
    return search_episodes(
        r.store, r.org_id, r.text, r.episodes_limit, embedder=r.embedder, user_id=r.user_id
    )


def known_documents(org_id: str, user_id: str, conversation_key: str, query: str = "") -> list[str]:
    """The documents the default sources read by path (the rest are queries): read together in
    one ``get_many`` (``adapters.prefetched``) instead of one round trip each. The person and
    the conversation are each read by two sources; the statistics by knowledge and episodes.
    With the turn's text, the frequency documents of its terms too: the episodes source searches
    with it on every turn (and knowledge when asked), and the keyword side of that search reads
    exactly these next, so the search costs one round trip less. An organisation with nothing
    indexed reads them for nothing (documents that do not exist: no payload)."""
    frequencies = sorted({bucket(t) for t in query_terms(query)}) if query else []
    return [
        *(stats_path(org_id, df_name(b)) for b in frequencies),
        collections.session_path(org_id, conversation_key),
        local_only_path(org_id, conversation_key),  # the session reads it after its own document
        collections.path("users", org=org_id, id=user_id),
        conversation_path(org_id, conversation_key),
        collections.path("org_settings", org=org_id, id="company"),
        agent_state_path(org_id, conversation_key),
        ext_path(org_id),
        stats_path(org_id, "totals"),
    ]


def default_sources(tasks_truth: int = 2) -> list[SourceSpec]:
    """The sources of seed 5.1.2; ``tasks_truth`` is 1 when tasks come from a real-time API."""
    return [
        SourceSpec("session", 1, 2, _session, known=True),
        SourceSpec("user", 1, 2, _user, known=True),
        SourceSpec("recent_messages", 2, 4, _recent),
        SourceSpec("summary", 3, 4, _summary, known=True),
        SourceSpec("preferences", 3, 4, _preferences),
        SourceSpec("persons", 2, 2, _persons),
        SourceSpec("departments", 2, 2, _departments),  # names the user's and the people's departments
        SourceSpec("tasks", 3, tasks_truth, _tasks),
        SourceSpec("goals", 3, 2, _goals),
        SourceSpec("teachings", 2, 2, _teachings),
        SourceSpec("company_values", 2, 3, _company_values, known=True),
        SourceSpec("knowledge", 4, 2, _knowledge),
        SourceSpec("episodes", 4, 4, _episodes),  # seed 001 §22: what was lived, conversation memory
        SourceSpec("agent_state", 1, 2, _agent_state, known=True),  # seed 004 §5; rendered by the prompt
        SourceSpec(
            "persona_ext", 3, 3, _persona_ext, known=True
        ),  # seed 001 §16: the prompt's 「学んだ好み」
    ]
