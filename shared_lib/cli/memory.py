"""``charter memory``: teachings, knowledge and company values in and out; the hybrid search.

charter memory add --org ORG --kind teaching|knowledge|value [--title T] [--by USER]
                   [--min-level N] [--priority N] TEXT
charter memory import --org ORG --kind KIND [--by USER] FILE   (.jsonl: an item a line; else one document)
charter memory list --org ORG [--kind KIND] [--json]
charter memory delete --org ORG [--by USER] ID
charter memory search --org ORG [--as USER] [--kind K ...] [--limit N] [--json] "QUERY"
charter memory reindex --org ORG     every item, memory and episode again (hand-written ones, another model)
charter memory check --org ORG [--repair] [--json]   the index against its sources (``cli.memory_check``)

Who may add (seed 000's levels, ``shared_lib.memory.ingest``): a teaching or a value level 6,
knowledge level 4; deleting, the author or that level. ``--by`` names the person the check is
for; without it the operator (who holds the store) acts. ``search --as USER`` reads as that
person (their level, their own memories); without it, as level 6 with no private memories.
The store and the embedder come from the operator runtime (``charter local up`` leaves them
configured); with no embedder the search is by keyword only.

``search --json``: ``{"query", "hits": [{rank, kind, source_id, text, score, keyword_score,
vector_score}]}``.

Exit codes: 0 done (a search that finds nothing too); 1 refused (the person's level, a person
not in the directory) or an id that is not there; 2 bad input (a kind, an id, a file that does
not read) or no store configured.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from shared_lib.cli import memory_check
from shared_lib.cli.console import NO_STORE, json_text
from shared_lib.cli.operations import runtime_for, store_options
from shared_lib.cli.runner import EXIT_FINDING, EXIT_OK, EXIT_USAGE, ProgressBar, fail
from shared_lib.errors import ArgumentError, ConfigError
from shared_lib.memory.index import SOURCE_KINDS
from shared_lib.memory.ingest import (
    KINDS,
    ItemNotFound,
    NotAllowed,
    add_item,
    delete_item,
    list_items,
    person_level,
    read_import,
    reindex,
)
from shared_lib.memory.reembed import reembed
from shared_lib.memory.search import Reader, search
from shared_lib.runtime import Runtime


def register(subparsers: Any) -> None:
    memory = subparsers.add_parser(
        "memory", help="teachings, knowledge and company values; the hybrid search"
    )
    sub = memory.add_subparsers(dest="memory_command", metavar="COMMAND")
    add = sub.add_parser("add", help="add a teaching, a knowledge document or a company value")
    _org(add)
    add.add_argument("--kind", required=True, choices=KINDS)
    add.add_argument("--title", help="a title (teaching, knowledge)")
    _by(add)
    add.add_argument("--min-level", type=int, default=1, help="knowledge: the level needed to read it")
    add.add_argument("--priority", type=int, default=0, help="teaching: higher comes first")
    add.add_argument("text", help="the text")
    add.set_defaults(func=run_add)
    imp = sub.add_parser("import", help="add the items of a file (.jsonl: one a line; else one document)")
    _org(imp)
    imp.add_argument("--kind", required=True, choices=KINDS)
    _by(imp)
    imp.add_argument("file", type=Path)
    imp.set_defaults(func=run_import)
    ls = sub.add_parser("list", help="the organisation's teachings, knowledge and values")
    _org(ls)
    ls.add_argument("--kind", choices=KINDS)
    ls.add_argument("--json", action="store_true", help="one JSON object")
    ls.set_defaults(func=run_list)
    rm = sub.add_parser("delete", help="delete an item, its chunks and vectors")
    _org(rm)
    _by(rm)
    rm.add_argument("id", help="the item's id (T-…, K-…, V-…)")
    rm.set_defaults(func=run_delete)
    find = sub.add_parser("search", help="hybrid search (keyword and vector) as a person reads")
    _org(find)
    find.add_argument("--as", dest="as_user", help="read as this person (their level, their memories)")
    find.add_argument("--kind", action="append", choices=SOURCE_KINDS, help="only these kinds (repeatable)")
    find.add_argument("--limit", type=int, default=5, choices=range(1, 51), metavar="1-50")
    find.add_argument("--json", action="store_true", help="one JSON object")
    find.add_argument("query")
    find.set_defaults(func=run_search)
    again = sub.add_parser(
        "reindex",
        help="index what was never indexed and re-embed every vector of another model (resumable)",
    )
    _org(again)
    again.add_argument("--all", action="store_true", help="index every item, memory and episode again")
    again.set_defaults(func=run_reindex)
    memory_check.register(sub)


def _org(p: argparse.ArgumentParser) -> None:
    p.add_argument("--org", required=True, help="the organisation")
    store_options(p)


def _by(p: argparse.ArgumentParser) -> None:
    p.add_argument("--by", help="the person the level check is for (default: the operator)")


def _runtime(args: argparse.Namespace) -> Runtime | None:
    try:
        return runtime_for(args)
    except ConfigError:
        return None


def run_add(args: argparse.Namespace) -> int:
    items = [{"text": args.text, "title": args.title, "min_level": args.min_level, "priority": args.priority}]
    return _add(args, items)


def run_import(args: argparse.Namespace) -> int:
    try:
        items = read_import(args.file)
    except ArgumentError as exc:
        return fail(str(exc), EXIT_USAGE)
    return _add(args, items)


def _add(args: argparse.Namespace, items: list[dict[str, Any]]) -> int:
    rt = _runtime(args)
    if rt is None:
        return fail(NO_STORE, EXIT_USAGE)
    for item in items:
        try:
            added = add_item(
                rt.store,
                rt.embedder,
                args.org,
                kind=args.kind,
                text=item["text"],
                now=rt.clock(),
                by=args.by,
                title=item.get("title"),
                min_level=int(item.get("min_level") or 1),
                priority=int(item.get("priority") or 0),
            )
        except NotAllowed as exc:
            return fail(f"memory: {exc}", EXIT_FINDING)
        except ArgumentError as exc:
            return fail(f"memory: {exc}", EXIT_USAGE)
        print(f"added {added['id']} ({added['kind']}) {_snippet(added['title'] or added['text'])}")
    return EXIT_OK


def run_list(args: argparse.Namespace) -> int:
    rt = _runtime(args)
    if rt is None:
        return fail(NO_STORE, EXIT_USAGE)
    items = list_items(rt.store, args.org, args.kind)
    if args.json:
        print(json_text({"org": args.org, "items": items}))
        return EXIT_OK
    print(f"{'id':<14} {'kind':<10} {'lvl':>3} {'by':<12} text")
    for i in items:
        print(
            f"{i['id']:<14} {i['kind']:<10} {i['min_level']:>3} {i['created_by']!s:<12} {_snippet(i['text'])}"
        )
    return EXIT_OK


def run_delete(args: argparse.Namespace) -> int:
    rt = _runtime(args)
    if rt is None:
        return fail(NO_STORE, EXIT_USAGE)
    try:
        gone = delete_item(rt.store, args.org, args.id, by=args.by)
    except ArgumentError as exc:
        return fail(f"memory: {exc}", EXIT_USAGE)
    except (NotAllowed, ItemNotFound) as exc:
        return fail(f"memory: {exc}", EXIT_FINDING)
    print(f"deleted {gone['id']} ({gone['kind']}) and its {gone['chunks']} chunk(s)")
    return EXIT_OK


def run_search(args: argparse.Namespace) -> int:
    rt = _runtime(args)
    if rt is None:
        return fail(NO_STORE, EXIT_USAGE)
    if args.as_user:
        level = person_level(rt.store, args.org, args.as_user)
        if level is None:
            return fail(f"memory: {args.as_user} is not in the directory of {args.org}", EXIT_USAGE)
        reader = Reader(args.as_user, level)
    else:
        reader = Reader(None, 6)
    try:
        hits = search(
            rt.store, rt.embedder, args.org, args.query, reader=reader, kinds=args.kind, limit=args.limit
        )
    except ConfigError as exc:
        return fail(f"memory: {exc}", EXIT_USAGE)
    rows: list[dict[str, Any]] = [
        {
            "rank": n,
            "kind": h.source_kind,
            "source_id": h.source_id,
            "text": h.text,
            "score": round(h.score, 6),
            "keyword_score": None if h.keyword_score is None else round(h.keyword_score, 4),
            "vector_score": None if h.vector_score is None else round(h.vector_score, 4),
        }
        for n, h in enumerate(hits, 1)
    ]
    if args.json:
        print(json_text({"query": args.query, "hits": rows}))
        return EXIT_OK
    print(f"{'#':>2} {'score':>8} {'keyword':>8} {'vector':>7} {'kind':<10} {'source':<14} text")
    for r in rows:
        kw = "-" if r["keyword_score"] is None else f"{r['keyword_score']:.2f}"
        vec = "-" if r["vector_score"] is None else f"{r['vector_score']:.3f}"
        print(
            f"{r['rank']:>2} {r['score']:>8.5f} {kw:>8} {vec:>7} {r['kind']:<10} {r['source_id']:<14} {_snippet(str(r['text']))}"
        )
    return EXIT_OK


def run_reindex(args: argparse.Namespace) -> int:
    rt = _runtime(args)
    if rt is None:
        return fail(NO_STORE, EXIT_USAGE)
    try:
        counts = reindex(
            rt.store, rt.embedder, args.org, now=rt.clock(), cipher=rt.cipher(args.org), every=args.all
        )
    except ArgumentError as exc:
        return fail(f"memory: {exc}", EXIT_USAGE)
    print(", ".join(f"{kind} {n}" for kind, n in counts.items()) + " indexed")
    if rt.embedder is not None:
        done = reembed(
            rt.store, rt.embedder, args.org, progress=ProgressBar(f"re-embedding ({rt.embedder.name})")
        )
        print(f"{done.embedded} chunks re-embedded with {rt.embedder.name}, {done.current} already of it")
    return EXIT_OK


def _snippet(text: str, width: int = 60) -> str:
    one = " ".join(str(text).split())
    return one if len(one) <= width else one[: width - 1] + "…"
