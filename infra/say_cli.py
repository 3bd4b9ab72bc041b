"""``charter say``: one message through the in-process product, its reply and decision trail.

The way a developer or an operator tries a sentence without a stack::

    charter say --org demo --as u-tanaka "山田部長に明日までに見積書お願い🙏"
    charter say --org demo --as u-sato1 --now 2026-12-28T22:30:00+09:00 --json "15日〆でおねがい"

The brain is chosen as ``charter demo`` chooses it (Claude with ``ANTHROPIC_API_KEY``, otherwise
the scripted model on a local fake Anthropic API). The store is the embedded one ``charter demo
--keep`` left (``.charter/demo/demo.sqlite``; made, with the demo's directory, when absent), or
``--store FILE.sqlite`` / ``--store firestore --project P``. ``--now`` sets the product's clock to
that moment (it then runs on, so a turn's own times still move forward). Messages in the same
``--room`` are one conversation: a 「はい」 answers the confirmation an earlier ``say`` left pending.

Exit 0 with a reply, 1 when the turn produced none or the reply shows what a user must never read
(a mask placeholder, an internal name, an ISO date), 2 for bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from infra.demo_cli import _print_turn, _record, leaks, sent_reply, turn_summary
from shared_lib.cli.operations import store_options
from shared_lib.demo_data import DEMO_ORG, DEMO_ROOM, seed_demo_directory
from shared_lib.errors import ConfigError
from shared_lib.turn.inbound import InboundMessage


def _moment(text: str) -> datetime:
    """An argparse type: an ISO date-time with its offset (a naive one is read as JST)."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an ISO date-time (2026-12-28T22:30:00+09:00)"
        ) from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=ZoneInfo("Asia/Tokyo"))
    return moment


def _clock(start: datetime) -> Callable[[], datetime]:
    """A clock that reads ``start`` now and runs on in real time from there."""
    origin = time.monotonic()
    base = start.astimezone(UTC)

    def now() -> datetime:
        return base + timedelta(seconds=time.monotonic() - origin)

    return now


def _store_values(args: argparse.Namespace) -> tuple[Path, dict[str, Any] | None]:
    """The SQLite file to keep (and seed) or the explicit store settings."""
    if args.store_choice == "memory":
        raise ConfigError("say keeps its conversation: give --store firestore or FILE.sqlite")
    if args.store_choice == "firestore":
        if not args.project:
            raise ConfigError("--store firestore needs --project P")
        return Path(args.keep) / "demo.sqlite", {"store": "firestore", "project": args.project}
    if args.store_choice:
        path = Path(args.store_choice).resolve()
        return path, {"store": "sqlite", "store_path": path}
    return (Path(args.keep) / "demo.sqlite").resolve(), None


def _run(args: argparse.Namespace) -> int:
    from infra.embedded import embedded_product
    from shared_lib.layers.ingress import accept

    text = " ".join(args.text).strip()
    if not text:
        raise ConfigError("say what? give the message text")
    db, store = _store_values(args)
    fresh = store is None and not db.exists()
    db.parent.mkdir(parents=True, exist_ok=True)
    clock = _clock(args.now) if args.now else None
    with embedded_product(db, clock=clock, store=store) as (rt, banner, sent):
        if fresh or (args.org == DEMO_ORG and not rt.store.query(f"orgs/{DEMO_ORG}/users", limit=1)):
            seed_demo_directory(rt.store)
        received = rt.clock()
        msg = InboundMessage(
            channel="http",
            org_id=args.org,
            room_id=args.room,
            user_id=args.as_user,
            text=text,
            message_id=f"say-{time.time_ns()}",
            event_id=f"say-{time.time_ns()}",
            received_at=received,
        )
        turn_id = accept(rt, msg)
        record = _record(rt.store, turn_id, org=args.org)
        summary = turn_summary(record, args.as_user, text, sent=sent_reply(sent(), turn_id))
    found = leaks(str(summary.get("reply") or ""))
    if args.json:
        print(
            json.dumps(
                {"llm": banner, "turn": summary, "leaks": found}, ensure_ascii=False, indent=2, default=str
            )
        )
    else:
        print(banner)
        _print_turn(1, summary)
    for item in found:
        print(f"the reply shows {item}", file=sys.stderr)
    return 0 if summary.get("reply") and not found else 1


def register(sub: Any) -> None:
    p = sub.add_parser("say", help="one message through the in-process product: its reply and decision trail")
    p.add_argument("--org", default=DEMO_ORG, help=f"the organisation (default {DEMO_ORG})")
    p.add_argument("--as", dest="as_user", required=True, metavar="USER", help="the speaker's user id")
    p.add_argument("--room", default=DEMO_ROOM, help=f"the room, one conversation (default {DEMO_ROOM})")
    p.add_argument("--now", type=_moment, metavar="ISO", help="the product's clock at the message")
    p.add_argument("--json", action="store_true", help="print the turn as JSON")
    store_options(p)  # default: the store ``charter demo`` keeps
    p.add_argument("--keep", default=".charter/demo", metavar="DIR", help=argparse.SUPPRESS)
    p.add_argument("text", nargs="+", help="the message, as the person writes it")
    p.set_defaults(func=_run)
