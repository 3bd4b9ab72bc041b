"""``charter episodes`` and ``charter tags``: episodic memory and its tags (seed 001 §21–22).

    charter episodes list --org ORG [--day YYYY-MM-DD] [--limit N] [--json]
    charter episodes show EPISODE_ID --org ORG [--json]
    charter tags list --org ORG [--days N] [--limit N] [--json]
    charter tags search --org ORG TAG... [--mode and|or] [--min-confidence C] [--limit N] [--json]
    charter tags show TAG --org ORG [--json]

``episodes list`` shows the organisation's episodes newest first (date, time, type, importance,
tags, the start of the story); ``show`` one episode in the seed's JSON form. ``tags list`` shows
the tag master (uses, last used), or with ``--days`` the trending tags of those days; ``tags
search`` the episodes and chunks carrying the tags (``--mode and``: all of them), best first,
each tag weighed by how recently it was used; a TAG is matched against the tag master as
people type it (``memory.tag_match``: exact, variant spellings and readings, a compound's part,
a typo, a near vector), so 「経費」 finds 「経費精算」; the tags it matched and their related tags
are said first. ``tags show`` one tag: its uses and its related tags (co-occurring, similar). Each takes ``--store``/``--project`` (default:
the settings, or what ``charter local up`` left in ``.charter/``).

Exit codes: 0 ok; 1 no such episode; 2 bad input or no store configured.
"""

from __future__ import annotations

import argparse
from datetime import date, datetime
from typing import Any

from shared_lib.cli.console import NO_STORE, json_text
from shared_lib.cli.operations import runtime_for, store_options
from shared_lib.cli.runner import fail
from shared_lib.errors import ConfigError
from shared_lib.memory import episodes, tags
from shared_lib.memory.tag_match import TagMatch, match_tags
from shared_lib.memory.tag_signal import masters, related_tags
from shared_lib.ports import Embedder, Store

EXIT_OK, EXIT_FINDING, EXIT_USAGE = 0, 1, 2
PREVIEW_CHARS = 40
EPISODE_FIELDS = ("id", "type", "date", "time", "story_text", "metadata")


def _store(args: argparse.Namespace) -> tuple[Store, datetime] | None:
    try:
        rt = runtime_for(args)
    except ConfigError:
        return None
    args.embedder = rt.embedder
    return rt.store, rt.clock()


def _bad_org(args: argparse.Namespace) -> bool:
    args.org = (args.org or "").strip()
    return not args.org or "/" in args.org


def _open(args: argparse.Namespace) -> tuple[Store, datetime] | int:
    """The store and the time of an ``--org`` command, else its exit code (said on stderr)."""
    if _bad_org(args):
        return fail("--org names one organisation (no '/')", EXIT_USAGE)
    found = _store(args)
    return found if found is not None else fail(NO_STORE, EXIT_USAGE)


def _when(value: Any) -> str:
    return value.isoformat(timespec="seconds") if isinstance(value, datetime) else str(value or "-")


def _episode_json(doc: dict[str, Any]) -> dict[str, Any]:
    """The seed's form, plus what the store adds (tags with scores, trigger, when)."""
    shown = {k: doc.get(k) for k in EPISODE_FIELDS}
    shown.update(
        trigger=doc.get("trigger"),
        tags=doc.get("tags", []),
        tag_scores={t: s.get("confidence") for t, s in (doc.get("tag_scores") or {}).items()},
        created_at=_when(doc.get("created_at")),
    )
    return shown


def _list(args: argparse.Namespace) -> int:
    try:
        day = date.fromisoformat(args.day) if args.day else None
    except ValueError:
        return fail(f"--day {args.day!r} is not YYYY-MM-DD", EXIT_USAGE)
    if isinstance(opened := _open(args), int):
        return opened
    listed = episodes.list_episodes(opened[0], args.org, day=day, limit=args.limit)
    rows = [_episode_json(doc) for _, doc in listed]
    if args.json:
        print(json_text({"org": args.org, "episodes": rows}))
        return EXIT_OK
    print(f"{'id':<36} {'date':<10} {'time':<8} {'type':<12} {'imp':>4}  tags / story")
    for row in rows:
        story = " ".join(str(row["story_text"] or "").split())[:PREVIEW_CHARS]
        importance = (row["metadata"] or {}).get("importance", 0.0)
        print(
            f"{row['id']:<36} {row['date']:<10} {row['time']:<8} {row['type']:<12} {importance:>4.1f}"
            f"  [{', '.join(row['tags'])}] {story}"
        )
    print(f"{len(rows)} episode(s)")
    return EXIT_OK


def _show(args: argparse.Namespace) -> int:
    if "/" in args.episode_id:
        return fail("EPISODE_ID names one episode (no '/')", EXIT_USAGE)
    if isinstance(opened := _open(args), int):
        return opened
    doc = episodes.get_episode(opened[0], args.org, args.episode_id)
    if doc is None:
        return fail(f"no episode {args.episode_id} in {args.org}", EXIT_FINDING)
    shown = _episode_json(doc)
    if args.json:
        print(json_text(shown))
        return EXIT_OK
    for key in ("id", "type", "date", "time", "trigger", "created_at"):
        print(f"{key:<15} {shown[key] or '-'}")
    for key, value in (shown["metadata"] or {}).items():
        text = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
        print(f"{key:<15} {text or '-'}")
    print(f"{'tag scores':<15} {', '.join(f'{t} ({c})' for t, c in shown['tag_scores'].items()) or '-'}")
    print(f"story\n  {str(shown['story_text']).replace(chr(10), chr(10) + '  ')}")
    return EXIT_OK


def _tags_list(args: argparse.Namespace) -> int:
    if isinstance(opened := _open(args), int):
        return opened
    store, now = opened
    if args.days:
        trending = tags.trending_tags(store, args.org, days=args.days, limit=args.limit, now=now)
        if args.json:
            print(
                json_text(
                    {
                        "org": args.org,
                        "days": args.days,
                        "trending": [{"tag": t, "uses": n} for t, n in trending],
                    }
                )
            )
            return EXIT_OK
        for tag, uses in trending:
            print(f"{uses:>6}  {tag}")
        print(f"{len(trending)} tag(s) used in the last {args.days} day(s)")
        return EXIT_OK
    master = tags.all_tags(store, args.org, limit=args.limit)
    rows = [
        {
            "tag": d.get("tag"),
            "use_count": d.get("use_count", 0),
            "last_used_at": _when(d.get("last_used_at")),
        }
        for d in master
    ]
    if args.json:
        print(json_text({"org": args.org, "tags": rows}))
        return EXIT_OK
    print(f"{'uses':>6}  {'last used (UTC)':<25} tag")
    for row in rows:
        print(f"{row['use_count']:>6}  {row['last_used_at']:<25} {row['tag']}")
    print(f"{len(rows)} tag(s)")
    return EXIT_OK


def _embedder(args: argparse.Namespace) -> Embedder | None:
    embedder: Embedder | None = getattr(args, "embedder", None)
    return embedder


def expand(store: Store, embedder: Embedder | None, org: str, asked: list[str]) -> list[list[TagMatch]]:
    """Per tag asked, the tags of the master it matches, best first (a tag split by the nightly
    job: its children too). The words asked are embedded only when tags have vectors of the
    embedder's model (the nightly job writes them)."""
    docs = [d for _, d in masters(store, org, fresh=True)]
    model = embedder.name if embedder else None
    embedded = embedder is not None and any(d.get("embedding_model") == model for d in docs)
    vectors = embedder.embed(asked, kind="query") if embedder and embedded else [None] * len(asked)
    children = {str(d.get("tag")): list(d.get("split_into") or []) for d in docs}
    out = []
    for word, vector in zip(asked, vectors, strict=True):
        found = match_tags(word, docs, query_vector=vector, model=model)
        for m in list(found):
            found += [
                TagMatch(c, m.how, m.score)
                for c in children.get(m.tag, [])
                if c not in {f.tag for f in found}
            ]
        out.append(found)
    return out


def _tags_search(args: argparse.Namespace) -> int:
    if not 0.0 <= args.min_confidence <= 1.0:
        return fail("--min-confidence is between 0 and 1", EXIT_USAGE)
    if isinstance(opened := _open(args), int):
        return opened
    store, now = opened
    matched = expand(store, _embedder(args), args.org, args.tags)
    if args.mode == "and":
        names = [found[0].tag if found else word for word, found in zip(args.tags, matched, strict=True)]
    else:
        names = list(dict.fromkeys([m.tag for found in matched for m in found] or args.tags))
    hits = tags.search_by_tags(
        store,
        args.org,
        names,
        mode=args.mode,
        min_confidence=args.min_confidence,
        limit=args.limit,
        now=now,
    )
    shown = list(dict.fromkeys(m.tag for found in matched for m in found[:1]))
    related = {t: related_tags(store, args.org, t) for t in shown}
    if args.json:
        print(
            json_text(
                {
                    "org": args.org,
                    "tags": args.tags,
                    "mode": args.mode,
                    "matched": {w: [m.as_json() for m in f] for w, f in zip(args.tags, matched, strict=True)},
                    "related": {
                        t: [{"tag": r, "score": s, "why": why} for r, s, why in rel]
                        for t, rel in related.items()
                    },
                    "hits": [h.as_json() for h in hits],
                }
            )
        )
        return EXIT_OK
    for word, found in zip(args.tags, matched, strict=True):
        print(f"{word}: " + (", ".join(f"{m.tag} ({m.how})" for m in found) or "no tag matches"))
    for tag, rel in related.items():
        if rel:
            print(f"related to {tag}: " + ", ".join(f"{r} ({why} {s:.2f})" for r, s, why in rel))
    for hit in hits:
        matched_text = ", ".join(f"{t} ({c:.2f})" for t, c in hit.matched)
        print(
            f"{hit.score:>6.3f}  {hit.kind:<7} {hit.path.rsplit('/', 1)[-1]:<36} [{matched_text}] {hit.text[:PREVIEW_CHARS]}"
        )
    print(f"{len(hits)} hit(s)")
    return EXIT_OK


def _tags_show(args: argparse.Namespace) -> int:
    if isinstance(opened := _open(args), int):
        return opened
    store = opened[0]
    found = expand(store, _embedder(args), args.org, [args.tag])[0]
    if not found:
        return fail(f"no tag matches {args.tag!r} in {args.org}", EXIT_FINDING)
    doc = next(d for _, d in masters(store, args.org) if d.get("tag") == found[0].tag)
    rel = related_tags(store, args.org, found[0].tag)
    shown = {
        "tag": found[0].tag,
        "how": found[0].how,
        "use_count": doc.get("use_count", 0),
        "last_used_at": _when(doc.get("last_used_at")),
        "split_into": doc.get("split_into") or [],
        "related": [{"tag": r, "score": s, "why": why} for r, s, why in rel],
        "also_matched": [m.as_json() for m in found[1:]],
    }
    if args.json:
        print(json_text(shown))
        return EXIT_OK
    print(f"{'tag':<12} {shown['tag']} ({shown['how']})")
    print(f"{'uses':<12} {shown['use_count']}, last {shown['last_used_at']}")
    if shown["split_into"]:
        print(f"{'split into':<12} {', '.join(shown['split_into'])}")
    print(f"{'related':<12} " + (", ".join(f"{r} ({why} {s:.2f})" for r, s, why in rel) or "-"))
    if found[1:]:
        print(f"{'also':<12} " + ", ".join(f"{m.tag} ({m.how})" for m in found[1:]))
    return EXIT_OK


def _command(sub: Any, name: str, help: str, func: Any) -> Any:
    """A subcommand over one organisation's store: ``--org``, ``--json`` and the store options."""
    p = sub.add_parser(name, help=help)
    p.add_argument("--org", required=True, help="the organisation")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    store_options(p)
    p.set_defaults(func=func)
    return p


def register(sub: Any) -> None:
    group = sub.add_parser("episodes", help="episodic memory: the daily digests and event episodes")
    esub = group.add_subparsers(dest="episodes_command", metavar="COMMAND", required=True)
    p = _command(esub, "list", "an organisation's episodes, newest first", _list)
    p.add_argument("--day", help="only this day's (YYYY-MM-DD)")
    p.add_argument("--limit", type=int, default=episodes.LIST_LIMIT, help="at most this many")
    p = _command(esub, "show", "one episode in the seed's JSON form", _show)
    p.add_argument("episode_id", metavar="EPISODE_ID")

    group = sub.add_parser("tags", help="memory tags: the tag master, trending tags, search by tag")
    tsub = group.add_subparsers(dest="tags_command", metavar="COMMAND", required=True)
    p = _command(tsub, "list", "the tags, most used first (--days N: the trending ones)", _tags_list)
    p.add_argument("--days", type=int, default=0, help="trending: uses in the last N days")
    p.add_argument("--limit", type=int, default=50, help="at most this many")
    p = _command(tsub, "search", "episodes and chunks carrying the tags, best first", _tags_search)
    p.add_argument("tags", nargs="+", metavar="TAG")
    p.add_argument("--mode", choices=("and", "or"), default="or", help="all the tags, or any (default)")
    p.add_argument("--min-confidence", type=float, default=0.5, help="the least confidence a tag counts with")
    p.add_argument("--limit", type=int, default=20, help="at most this many")
    p = _command(tsub, "show", "one tag: its uses and its related tags", _tags_show)
    p.add_argument("tag", metavar="TAG")
