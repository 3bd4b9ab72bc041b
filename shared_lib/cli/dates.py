"""``charter dates parse``: how the one date reader reads a text, at a given moment.

charter dates parse "TEXT" --now ISO_DATETIME [--tz Asia/Tokyo] [--whole] [--json]

Prints ``date``, ``time``, ``end_date`` (null outside ranges), ``deadline`` (the day it
means as a deadline: 「今週末」 is Saturday–Sunday, due Friday), ``is_past``, ``ambiguous``
(with the note), ``doubt`` (why the guardian would ask: ``weekday``, ``next_year``),
``expression`` (the part read), ``kind``, and the Japanese display forms of the reading and
of its deadline.
The text is searched (the first expression anywhere); ``--whole`` reads it as a tool
parameter is read (the whole value must be one expression). A ``--now`` without an offset
is in ``--tz``.

Exit codes: 0 read, 1 nothing was read (or the day does not exist: the reason is printed),
2 bad usage (a ``--now`` or ``--tz`` that does not parse).
"""

from __future__ import annotations

import argparse
import json
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from shared_lib.cli.runner import fail
from shared_lib.dates import DateError, Reading, display_date, display_reading, read_or_error

EXIT_OK, EXIT_NOT_READ, EXIT_USAGE = 0, 1, 2


def register(subparsers: Any) -> None:
    dates = subparsers.add_parser("dates", help="the date reader (shared_lib.dates)")
    sub = dates.add_subparsers(dest="dates_command", metavar="COMMAND", required=True)
    parse = sub.add_parser("parse", help="read the date/time expression of a text at a given moment")
    parse.add_argument("text", metavar="TEXT", help="the text to read")
    parse.add_argument("--now", required=True, help="the moment to read at (ISO 8601, e.g. 2026-11-24T10:00)")
    parse.add_argument("--tz", default="Asia/Tokyo", help="the calendar's time zone (default Asia/Tokyo)")
    parse.add_argument("--whole", action="store_true", help="the whole text must be one expression")
    parse.add_argument("--json", action="store_true", help="one JSON object")
    parse.set_defaults(func=run_parse)


def as_dict(reading: Reading, now: datetime) -> dict[str, Any]:
    return {
        "date": reading.date.isoformat() if reading.date else None,
        "time": reading.time.strftime("%H:%M") if reading.time else None,
        "end_date": reading.end_date.isoformat() if reading.end_date else None,
        "deadline": reading.deadline.isoformat() if reading.deadline else None,
        "is_past": reading.is_past,
        "ambiguous": reading.ambiguous,
        "ambiguity": reading.ambiguity,
        "doubt": reading.doubt,
        "expression": reading.expression,
        "kind": reading.kind,
        "display": display_reading(reading, today=now.date()),
        "deadline_display": display_date(reading.deadline, today=now.date()) if reading.deadline else None,
    }


def run_parse(args: argparse.Namespace) -> int:
    try:
        tz = ZoneInfo(args.tz)
    except (ZoneInfoNotFoundError, ValueError):
        return fail(f"dates parse: unknown time zone {args.tz!r}", EXIT_USAGE)
    try:
        now = datetime.fromisoformat(args.now)
    except ValueError:
        return fail(f"dates parse: --now {args.now!r} is not an ISO date-time", EXIT_USAGE)
    now = now.astimezone(tz) if now.tzinfo else now.replace(tzinfo=tz)
    try:
        reading = read_or_error(args.text, now, tz, whole=args.whole)
    except DateError as exc:
        if args.json:
            print(json.dumps({"read": False, "code": exc.code, "reason": str(exc)}, ensure_ascii=False))
        else:
            print(f"not read ({exc.code}): {exc}")
        return EXIT_NOT_READ
    fields = as_dict(reading, now)
    if args.json:
        print(json.dumps(fields, ensure_ascii=False))
    else:
        for name, value in fields.items():
            shown = (
                "null" if value is None else ("yes" if value is True else "no" if value is False else value)
            )
            print(f"{name:<11} {shown}")
    return EXIT_OK
