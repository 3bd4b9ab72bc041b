"""``charter data purge --org ORG --user USER [--dry-run] [--json]``: a person's data, deleted
everywhere in the store, with the count per collection.

What is a person's (found without a collection-group query, so on Firestore's default indexes):

* their conversations (``conversations`` where ``user_id``; and the conversation keys of their
  records, for history written before the conversation document existed): every message,
  the conversation document, the session, the agent state, the LLM calls (``session_id``) and dead-lettered
  turns (``conversation_key``) of each;
* ``memories`` and every search chunk that is theirs (``memory_chunks`` where ``user_id``: their
  memories', their event episodes', the facts compaction kept of their conversations), each
  chunk's whole source removed with its manifest (``memory_sources``) and the keyword statistics
  that count it; the chunks of the episodes they appear in (a daily digest's, nobody's own) go
  with those episodes; ``goals``, ``vaults``, ``receipts``, ``observability``, ``shadow_candidates``,
  ``approval_jobs`` (the jobs they requested), ``agent_states`` and the fine-tuning candidates
  and staging ledger (``ft_candidates``, ``ft_ledgers``) and the periodic tasks they gave the
  heartbeat (``heartbeat_tasks``: each run would be their turn) where ``user_id`` (and the
  vaults of their recorded turns); the ``episodes`` they appear in (``user_ids``);
* the store backend's ``tasks`` they own: created by them or assigned to them (the
  directory's task account), as ``delete_task`` counts ownership.

What they gave the assistant to keep is sealed in the kept document itself (``sealing``: a
memory, its chunks, a message of their history, a conversation's summaries, a task, an episode
carry their values encrypted in a ``sealed`` field), so deleting the document deletes the sealed
values with it: no key, map or copy of a value is kept anywhere else.

Kept on purpose: the directory entry (``users``: the organisation's roster, not this
assistant's data), announcements and permission changes (the organisation's record; their
text is stored masked), and short-lived bookkeeping without personal text (claims, dedupe,
send receipts), which expires on its own. Envelopes too large for the bus (``blobs``) expire
after ``CHARTER_BLOB_TTL_DAYS``.

BigQuery keeps the records streamed on ``turns.events``: the command prints the documented
job (``bigquery_job``; terraform/README.md, "Purging a person") to run with ``bq``.

Exit codes: 0 done (or nothing found), 2 bad input or no store configured.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from typing import Any

from shared_lib import collections
from shared_lib.cli.console import NO_STORE, json_text, live_store
from shared_lib.cli.operations import store_options
from shared_lib.cli.runner import fail
from shared_lib.context.history import conversation_path, history_path
from shared_lib.delivery.topology import TOPOLOGY
from shared_lib.memory.episode_index import SOURCE_KIND as EPISODE
from shared_lib.memory.index import chunk_path, remove_source, source_path
from shared_lib.ports import Op, Store
from shared_lib.tools.directory import get_person

SCAN_LIMIT = 10_000  # documents read per query; a purge repeats until nothing is left
PURGED = (
    "messages",
    "conversations",
    "sessions",
    "agent_states",
    "memories",
    "memory_chunks",
    "memory_sources",
    "goals",
    "tasks",
    "receipts",
    "vaults",
    "observability",
    "shadow_candidates",
    "llm_calls",
    "failures",
    "salaries",
    "approval_jobs",
    "episodes",
    "ft_candidates",
    "ft_ledgers",
    "heartbeat_tasks",
)


def _where(store: Store, collection: str, org: str, field: str, value: Any) -> list[str]:
    """Paths of the documents of ``orgs/{org}/{collection}`` whose ``field`` is ``value``."""
    where: list[tuple[str, Op, Any]] = [(field, "==", value)]
    found = store.query(f"orgs/{org}/{collection}", where=where, limit=SCAN_LIMIT)
    return [f"orgs/{org}/{collection}/{doc_id}" for doc_id, _ in found]


def _existing(store: Store, paths: Iterable[str]) -> list[str]:
    return [p for p in paths if store.get(p) is not None]


def person_documents(store: Store, org: str, user: str) -> dict[str, list[str]]:
    """Collection -> the paths of ``user``'s documents in ``org`` (nothing is changed)."""
    found: dict[str, set[str]] = {name: set() for name in PURGED}
    records = store.query(f"orgs/{org}/observability", where=[("user_id", "==", user)], limit=SCAN_LIMIT)
    conversations = store.query(
        f"orgs/{org}/conversations", where=[("user_id", "==", user)], limit=SCAN_LIMIT
    )
    keys = {str(d["conversation_key"]) for _, d in [*records, *conversations] if d.get("conversation_key")}
    turn_ids = {doc_id for doc_id, _ in records}
    for key in sorted(keys):
        found["conversations"].add(conversation_path(org, key))
        messages = store.query(history_path(org, key), limit=SCAN_LIMIT)
        found["messages"].update(f"{history_path(org, key)}/{doc_id}" for doc_id, _ in messages)
        found["sessions"].add(collections.session_path(org, key))
        found["agent_states"].add(
            collections.path("agent_states", org=org, id=collections.conversation_id(key))
        )
        found["llm_calls"].update(_where(store, "llm_calls", org, "session_id", key))
        found["failures"].update(_where(store, "failures", org, "conversation_key", key))
    found["conversations"].update(f"orgs/{org}/conversations/{doc_id}" for doc_id, _ in conversations)
    for name in (
        "memories",
        "memory_chunks",
        "goals",
        "receipts",
        "vaults",
        "observability",
        "shadow_candidates",
        "approval_jobs",
        "agent_states",
        "ft_candidates",
        "ft_ledgers",
        "heartbeat_tasks",
    ):
        found[name].update(_where(store, name, org, "user_id", user))
    found["vaults"].update(
        collections.path("vaults", org=org, id=f"{t}{s}") for t in turn_ids for s in ("", "-shadow")
    )
    found["salaries"].update(_where(store, "salaries", org, "user_id", user))
    episodes = store.query(
        f"orgs/{org}/episodes", where=[("user_ids", "array_contains", user)], limit=SCAN_LIMIT
    )
    found["episodes"].update(f"orgs/{org}/episodes/{doc_id}" for doc_id, _ in episodes)
    for kind, source_id in _sources(store, org, user, [doc_id for doc_id, _ in episodes]):
        manifest = source_path(org, kind, source_id)
        found["memory_sources"].add(manifest)
        chunk_ids = (store.get(manifest) or {}).get("chunk_ids") or []
        found["memory_chunks"].update(chunk_path(org, str(c)) for c in chunk_ids)
    found["tasks"].update(_where(store, "tasks", org, "created_by", user))
    person = get_person(store, org, user)
    found["tasks"].update(
        _where(store, "tasks", org, "assignee_id", person.task_account_id if person else user)
    )
    return {name: sorted(_existing(store, paths)) for name, paths in found.items()}


def _sources(store: Store, org: str, user: str, episode_ids: list[str]) -> set[tuple[str, str]]:
    """(kind, id) of every indexed source that is the person's: of their chunks (whatever the
    kind: a memory, an event episode, a fact), and the episodes they appear in."""
    chunks = store.query(f"orgs/{org}/memory_chunks", where=[("user_id", "==", user)], limit=SCAN_LIMIT)
    found = {(str(d.get("source_kind")), str(d.get("source_id"))) for _, d in chunks}
    return found | {(EPISODE, eid) for eid in episode_ids}


def bigquery_job(org: str, user: str) -> str:
    """The ``bq`` command that deletes the person's rows of the BigQuery sink (see the README)."""
    table = f"{TOPOLOGY.bigquery['dataset']}.{TOPOLOGY.bigquery['table']}"
    return (
        "bq query --use_legacy_sql=false "
        f"--parameter=org:STRING:{org} --parameter=user:STRING:{user} "
        f"'DELETE FROM `{table}` WHERE org_id = @org AND (user_id = @user OR turn_id IN "
        f"(SELECT turn_id FROM `{table}` WHERE org_id = @org AND user_id = @user AND turn_id IS NOT NULL))'"
    )


def purge(store: Store, org: str, user: str, *, dry_run: bool = False) -> dict[str, int]:
    """Delete ``user``'s documents in ``org`` (unless ``dry_run``); the count per collection."""
    found = person_documents(store, org, user)
    if not dry_run:
        # each source's chunks (a digest's too), its manifest and the statistics that count them
        for kind, source_id in _sources(store, org, user, [p.rsplit("/", 1)[1] for p in found["episodes"]]):
            remove_source(store, org, kind, source_id)
        for paths in found.values():
            for path in paths:
                store.delete(path)
    return {name: len(paths) for name, paths in found.items()}


def _purge(args: argparse.Namespace) -> int:
    org, user = (args.org or "").strip(), (args.user or "").strip()
    if not org or not user or "/" in org + user:
        return fail("--org and --user name one organisation and one person (no '/')", 2)
    store = live_store(args)
    if store is None:
        return fail(f"{NO_STORE}", 2)
    counts = purge(store, org, user, dry_run=args.dry_run)
    report = {
        "org": org,
        "user": user,
        "dry_run": args.dry_run,
        "counts": counts,
        "total": sum(counts.values()),
        "bigquery_job": bigquery_job(org, user),
    }
    if args.json:
        print(json_text(report))
        return 0
    verb = "would delete" if args.dry_run else "deleted"
    for name, count in counts.items():
        print(f"{name:<18} {count:>6}")
    print(f"{verb} {report['total']} document(s) of {user} in {org}")
    print(f"BigQuery (run once the rows are out of the streaming buffer):\n  {report['bigquery_job']}")
    return 0


def register(sub: Any) -> None:
    data = sub.add_parser("data", help="personal data in the store: purge a person")
    dsub = data.add_subparsers(dest="data_command", metavar="COMMAND", required=True)
    p = dsub.add_parser("purge", help="delete a person's data everywhere in the store, with the counts")
    p.add_argument("--org", required=True, help="the organisation")
    p.add_argument("--user", required=True, help="the person's user id")
    p.add_argument("--dry-run", action="store_true", help="count, delete nothing")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    store_options(p)
    p.set_defaults(func=_purge)
