"""``charter operators``: who may act on the admin service (``shared_lib.admin.identity``).

    charter operators add --org ORG --person USER [--platform] [--by NAME]
    charter operators iam --org ORG --person USER --email EMAIL [--platform]
    charter operators list [--org ORG] [--json]
    charter operators revoke ID

``add`` makes a per-organisation operator credential of a person of the organisation's
directory and prints the token once (only its SHA-256 is stored); ``--platform`` also lets it
use the deployment-wide controls (stop, pause, resume) and read every organisation. ``iam``
maps a Google identity (the verified email of its ID token) to a person the same way.
Running them takes access to the store (``--store``/``--project``): that is the authority.
Exit codes: 0 ok, 1 nothing to revoke, 2 bad input (a person not in the directory) or no store.
"""

from __future__ import annotations

import argparse
from typing import Any

from shared_lib.admin import identity
from shared_lib.cli.console import NO_STORE, json_text
from shared_lib.cli.operations import runtime_for, store_options
from shared_lib.cli.runner import fail
from shared_lib.errors import ConfigError
from shared_lib.memory.ingest import person_level


def _store(args: argparse.Namespace) -> Any:
    try:
        return runtime_for(args).store
    except ConfigError:
        fail(NO_STORE)
        return None


def _in_directory(store: Any, args: argparse.Namespace) -> bool:
    if person_level(store, args.org, args.person) is None:
        fail(f"{args.person} is not in the directory of {args.org}")
        return False
    return True


def _add(args: argparse.Namespace) -> int:
    if (store := _store(args)) is None or not _in_directory(store, args):
        return 2
    from shared_lib.ids import utc_now

    token = identity.new_credential(
        store, args.org, args.person, by=args.by, now=utc_now(), platform=args.platform
    )
    print(token)
    return 0


def _iam(args: argparse.Namespace) -> int:
    if "@" not in args.email:
        return fail(f"--email {args.email!r} is not an email")
    if (store := _store(args)) is None or not _in_directory(store, args):
        return 2
    identity.add_identity(store, args.email, args.org, args.person, platform=args.platform)
    print(f"{args.email.strip().lower()} acts as {args.person} in {args.org}")
    return 0


def _list(args: argparse.Namespace) -> int:
    if (store := _store(args)) is None:
        return 2
    rows = identity.list_credentials(store, args.org)
    if args.json:
        print(json_text({"credentials": rows}))
        return 0
    for r in rows:
        scope = "platform" if r.get("platform") else "org"
        print(
            f"{r['id']:<13} {r.get('org_id', ''):<12} {r.get('person', ''):<14} {scope:<9} {r.get('created_by', '')}"
        )
    print(f"{len(rows)} credential(s)")
    return 0


def _revoke(args: argparse.Namespace) -> int:
    if len(args.id) < 8:
        return fail("ID is the first 8 or more characters `charter operators list` shows")
    if (store := _store(args)) is None:
        return 2
    gone = identity.revoke(store, args.id)
    if not gone:
        return fail(f"no credential {args.id}", 1)
    print(f"revoked {gone} credential(s)")
    return 0


def register(sub: Any) -> None:
    op = sub.add_parser("operators", help="operator credentials and identities of the admin service")
    osub = op.add_subparsers(dest="operators_command", metavar="COMMAND", required=True)
    p = osub.add_parser("add", help="a credential of a person of the organisation (the token, once)")
    p.add_argument("--org", required=True)
    p.add_argument("--person", required=True, help="a user id of the organisation's directory")
    p.add_argument("--platform", action="store_true", help="also the deployment-wide controls")
    p.add_argument("--by", default="cli", help="who made it (recorded)")
    store_options(p)
    p.set_defaults(func=_add)
    p = osub.add_parser("iam", help="let a Google identity (its ID token's email) act as a person")
    p.add_argument("--org", required=True)
    p.add_argument("--person", required=True)
    p.add_argument("--email", required=True)
    p.add_argument("--platform", action="store_true", help="also the deployment-wide controls")
    store_options(p)
    p.set_defaults(func=_iam)
    p = osub.add_parser("list", help="the credentials (never a token)")
    p.add_argument("--org")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    store_options(p)
    p.set_defaults(func=_list)
    p = osub.add_parser("revoke", help="delete a credential by the id `list` shows")
    p.add_argument("id")
    store_options(p)
    p.set_defaults(func=_revoke)
