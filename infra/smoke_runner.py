"""One smoke turn end to end: a signed smoke webhook in, the turn's record out, every revision checked.

Used by the Cloud Build ``smoke`` step and the local stack's tests::

    python -m infra.smoke_runner --url https://c-abc1234---charter-ingress-xyz.a.run.app \\
        --store firestore --project P --expect-revision c-abc1234

posts a webhook with ``X-Charter-Smoke`` (``infra.webhook_sender``, ``smoke=True``) to ``--url``,
waits for the observability record of the turn in the store, and checks that it is a smoke
turn and that ingress, every chain layer and the observer ran on the expected revision: the
revision is ``--expect-revision`` itself (``candidate`` on the local stack) or ends with
``-<it>`` (Cloud Run's ``K_REVISION`` is ``<service>-<tag>``). Prints one line per layer and
exits 0 when all hold, 1 when one does not (or no record comes within ``--timeout``), 2 on bad
input (no store configured, an unknown channel).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from infra.webhook_sender import DEFAULT_USERS, send
from shared_lib import collections
from shared_lib.channels.secrets import ChannelSecrets
from shared_lib.errors import ConfigError
from shared_lib.ports import Store
from shared_lib.rollout.smoke import SMOKE_ORG
from shared_lib.tools.directory import get_person, seed_directory

# Every layer a served chat turn passes, in order: the ingress, the chain (trail), the observer.
LAYERS = ("ingress", "context", "brain", "guardian", "authorizer", "executor", "responder", "observer")


@dataclass
class SmokeResult:
    """What one smoke turn showed; ``problems`` empty means it passed."""

    turn_id: str = ""
    status: int = 0
    record: dict[str, Any] | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def revision_matches(revision: str, expected: str) -> bool:
    """``candidate`` matches ``candidate``; ``c-abc`` matches ``charter-brain-c-abc``.

    >>> revision_matches("charter-brain-c-abc", "c-abc"), revision_matches("charter-brain-c-abd", "c-abc")
    (True, False)
    """
    return revision == expected or revision.endswith("-" + expected)


def check_record(record: dict[str, Any], expected: str, layers: tuple[str, ...] = LAYERS) -> list[str]:
    """What is wrong with a smoke turn's record: not smoke, a layer missing or on another revision."""
    problems = [] if record.get("smoke") is True else ["the record is not a smoke turn"]
    revisions: dict[str, str] = record.get("revisions") or {}
    for layer in layers:
        if layer not in revisions:
            problems.append(f"{layer}: no revision recorded")
    for layer, revision in revisions.items():
        if not revision_matches(revision, expected):
            problems.append(f"{layer}: ran on {revision!r}, not {expected!r}")
    return problems


SMOKE_USER = "smoke-test"


def ensure_smoke_person(store: Store, org: str, user: str) -> None:
    """The synthetic tenant's one person, level 1 (it may only greet), in the directory."""
    if get_person(store, org, user) is None:
        seed_directory(store, org, [{"user_id": user, "name": "スモークテスト", "level": 1}], {})


def run_smoke(
    url: str,
    store: Store,
    *,
    expect: str,
    channel: str = "http",
    text: str = "こんにちは (smoke test)",
    org: str = SMOKE_ORG,
    room: str = "smoke",
    user: str = SMOKE_USER,
    event_id: str | None = None,
    secrets: ChannelSecrets | None = None,
    timeout: float = 120.0,
    interval: float = 0.5,
    sleep: Callable[[float], None] = time.sleep,
    client: httpx.Client | None = None,
) -> SmokeResult:
    """Post one smoke webhook to ``url``, wait for its record in ``store``, check it.

    The turn is a synthetic tenant's (``SMOKE_ORG``): its one person is written to the
    directory first, because the ingress refuses a person its tenant does not have; the
    webhook is signed with that tenant's credential (``HTTP_WEBHOOK_TENANTS``).
    """
    result = SmokeResult()
    ensure_smoke_person(store, org, user)
    answer = send(
        url,
        channel,
        text,
        client=client,
        org=org,
        room=room,
        user=user,
        event_id=event_id,
        secrets=secrets,
        smoke=True,
    )
    result.status = answer.status
    turn_ids = answer.body.get("turn_ids") if isinstance(answer.body, dict) else None
    if not 200 <= answer.status < 300 or not turn_ids:
        result.problems.append(f"ingress answered {answer.status} {answer.body}: no turn started")
        return result
    result.turn_id = str(turn_ids[0])
    path = collections.path("observability", org=org, id=result.turn_id)
    waited = 0.0
    while (record := store.get(path)) is None and waited < timeout:
        sleep(interval)
        waited += interval
    if record is None:
        result.problems.append(f"no record of turn {result.turn_id} within {timeout:g}s")
        return result
    result.record = record
    result.problems = check_record(record, expect)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.smoke_runner", description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True, help="the candidate ingress (its tag URL)")
    parser.add_argument("--expect-revision", required=True, help="candidate tag (c-<sha>) or revision name")
    parser.add_argument("--channel", default="http", choices=sorted(DEFAULT_USERS))
    parser.add_argument("--text", default="こんにちは (smoke test)")
    parser.add_argument("--org", default=SMOKE_ORG)
    parser.add_argument("--room", default="smoke")
    parser.add_argument("--user", default=SMOKE_USER)
    parser.add_argument("--event-id")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for the record")
    parser.add_argument("--store", dest="store_choice", help="firestore|FILE.sqlite (default: settings)")
    parser.add_argument("--project")
    args = parser.parse_args(argv)
    from shared_lib.wiring.composition import operator_runtime

    try:
        store = operator_runtime(store=args.store_choice, project=args.project).store
    except ConfigError as exc:
        print(f"smoke_runner: {exc}", file=sys.stderr)
        return 2
    try:
        result = run_smoke(
            args.url,
            store,
            expect=args.expect_revision,
            channel=args.channel,
            text=args.text,
            org=args.org,
            room=args.room,
            user=args.user,
            event_id=args.event_id,
            secrets=ChannelSecrets.from_env(os.environ),
            timeout=args.timeout,
        )
    except (ValueError, httpx.HTTPError) as exc:
        print(f"smoke_runner: {exc}", file=sys.stderr)
        return 2
    for layer, revision in ((result.record or {}).get("revisions") or {}).items():
        print(f"  {layer:<11} {revision}")
    if result.ok:
        print(f"smoke turn {result.turn_id}: every layer ran on {args.expect_revision}")
        return 0
    for problem in result.problems:
        print(f"smoke FAILED: {problem}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
