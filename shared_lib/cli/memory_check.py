"""``charter memory check``: is the memory index what its sources say, and its repair.

charter memory check --org ORG [--repair] [--json]

Reads the whole organisation's index (``shared_lib.memory.consistency``: every manifest, chunk,
source document and statistics document) and prints each finding: a source gone, a chunk
missing or orphaned, a vector missing or of another dimension or model, statistics (chunk
counts, postings) out of step with the chunks. ``--repair`` fixes them (indexes a source again
from its document, removes what has no source, deletes orphans, re-embeds, counts the
statistics again) and checks again; running it twice changes nothing more.

``--json``: ``{"org", "sources", "chunks", "counts", "findings": [...], "repaired": {...}|null,
"after": {...}|null}``.

Exit codes: 0 nothing found (or everything found was repaired); 1 a finding left (without
``--repair``, or one the repair could not fix); 2 no store configured.
"""

from __future__ import annotations

import argparse
from typing import Any

from shared_lib.cli.console import NO_STORE, json_text
from shared_lib.cli.operations import runtime_for, store_options
from shared_lib.cli.runner import EXIT_FINDING, EXIT_OK, EXIT_USAGE, fail
from shared_lib.errors import ConfigError
from shared_lib.memory.consistency import Report, check, repair


def register(sub: Any) -> None:
    p = sub.add_parser("check", help="check the memory index against its sources; --repair fixes it")
    p.add_argument("--org", required=True, help="the organisation")
    store_options(p)
    p.add_argument("--repair", action="store_true", help="repair what the check finds, then check again")
    p.add_argument("--json", action="store_true", help="one JSON object")
    p.set_defaults(func=run_check)


def run_check(args: argparse.Namespace) -> int:
    try:
        rt = runtime_for(args)
    except ConfigError:
        return fail(NO_STORE, EXIT_USAGE)
    report = check(rt.store, rt.embedder, args.org)
    repaired = after = None
    if args.repair and report.findings:
        repaired = repair(rt.store, rt.embedder, args.org, report, now=rt.clock(), cipher=rt.cipher(args.org))
        after = check(rt.store, rt.embedder, args.org)
    left = after if after is not None else report
    if args.json:
        print(
            json_text(
                {
                    **report.as_dict(),
                    "repaired": repaired.as_dict() if repaired else None,
                    "after": after.as_dict() if after else None,
                }
            )
        )
    else:
        print(_render(report))
        if repaired is not None and after is not None:
            print("repaired: " + ", ".join(f"{k} {v}" for k, v in repaired.as_dict().items()))
            print("after repair: " + (_summary(after) if after.findings else "nothing found"))
    return EXIT_FINDING if left.findings else EXIT_OK


def _summary(report: Report) -> str:
    return ", ".join(f"{k} {n}" for k, n in sorted(report.counts().items()))


def _render(report: Report) -> str:
    head = f"{report.org_id}: {report.sources} source(s), {report.chunks} chunk(s)"
    if not report.findings:
        return f"{head}; nothing found"
    lines = [f"{head}; {_summary(report)}"]
    for f in report.findings:
        where = " ".join(x for x in (f.source_kind, f.source_id, f.chunk_id) if x)
        lines.append(f"  {f.problem:<16} {where}{'  ' + f.detail if f.detail else ''}")
    return "\n".join(lines)
