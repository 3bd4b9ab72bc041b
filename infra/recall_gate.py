"""The recall gate of the pipeline: the stable revisions hear a fact, the candidate must remember it.

Used by the Cloud Build ``recall-gate`` step (after ``smoke``, before ``traffic``) and the local
stack's tests::

    python -m infra.recall_gate --stable-url https://charter-ingress-xyz.a.run.app \\
        --candidate-url https://c-abc1234---charter-ingress-xyz.a.run.app \\
        --expect-revision c-abc1234 --run-id BUILD_ID --store firestore --project P

1. seeds a fresh conversation of the smoke tenant (``SMOKE_ORG``, a room of its own per run)
   through the **stable** ingress with normal webhooks (``RecallProbe.seed_turns``, a fact drawn
   for this run), each waited for until its record shows it ran on the stable revisions;
2. asks the **candidate** the recall question in the same conversation: a smoke webhook at the
   candidate ingress (``infra.smoke_runner.run_smoke``), so context, brain, guardian, authorizer,
   executor, responder and observer of the candidate all run it, each on the candidate revision;
3. judges the reply (``shared_lib.rollout.recall.judge``: fixed rules, then the evaluator peer
   given by ``--evaluator-peer``), and writes the run to ``rollout_recall_checks/{run id}``.

Exits 0 when the candidate remembered, 1 when it did not or a turn went wrong (the build stops
before the traffic shift: the stable revisions keep serving), 2 on bad input (no store, an
unknown peer). A smoke turn served by the legacy keyword brain (the flags put the smoke tenant
on ``legacy``) is not judged: that brain keeps no conversation; the run says so and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets as token
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from infra.smoke_runner import SMOKE_USER, ensure_smoke_person, revision_matches, run_smoke
from infra.webhook_sender import send
from shared_lib import collections
from shared_lib.channels.secrets import ChannelSecrets
from shared_lib.errors import ConfigError
from shared_lib.ports import LLMPeer, Store
from shared_lib.rollout.recall import (
    RecallProbe,
    RecallVerdict,
    judge,
    make_probe,
    not_applicable,
    record_check,
)
from shared_lib.rollout.smoke import SMOKE_ORG


@dataclass
class GateResult:
    """One run: the probe, the turns, the verdict; ``problems`` are turns that went wrong."""

    probe: RecallProbe
    room: str = ""
    turns: dict[str, str] = field(default_factory=dict)
    verdict: RecallVerdict | None = None
    problems: list[str] = field(default_factory=list)
    record_path: str = ""

    @property
    def ok(self) -> bool:
        return not self.problems and self.verdict is not None and self.verdict.passed


def _wait_record(
    store: Store, org: str, turn_id: str, timeout: float, interval: float, sleep: Callable[[float], None]
) -> dict[str, Any] | None:
    path = collections.path("observability", org=org, id=turn_id)
    waited = 0.0
    while (found := store.get(path)) is None and waited < timeout:
        sleep(interval)
        waited += interval
    return found


def seed_conversation(
    stable_url: str,
    store: Store,
    result: GateResult,
    *,
    expect: str,
    channel: str,
    org: str,
    user: str,
    secrets: ChannelSecrets | None,
    timeout: float,
    interval: float,
    sleep: Callable[[float], None],
    client: httpx.Client | None,
) -> None:
    """The seed turns at the stable ingress, one after the other, each until its record."""
    for i, text in enumerate(result.probe.seed_turns):
        answer = send(
            stable_url,
            channel,
            text,
            client=client,
            org=org,
            room=result.room,
            user=user,
            event_id=f"{result.room}-seed{i}",
            secrets=secrets,
        )
        turn_ids = answer.body.get("turn_ids") if isinstance(answer.body, dict) else None
        if not 200 <= answer.status < 300 or not turn_ids:
            result.problems.append(
                f"seed turn {i + 1}: the stable ingress answered {answer.status} {answer.body}"
            )
            return
        turn_id = result.turns[f"seed{i + 1}"] = str(turn_ids[0])
        record = _wait_record(store, org, turn_id, timeout, interval, sleep)
        if record is None:
            result.problems.append(f"seed turn {i + 1} ({turn_id}): no record within {timeout:g}s")
            return
        on_candidate = [
            layer for layer, rev in (record.get("revisions") or {}).items() if revision_matches(rev, expect)
        ]
        if record.get("smoke") or on_candidate:
            result.problems.append(
                f"seed turn {i + 1} ({turn_id}) did not run on the stable revisions: {on_candidate or 'smoke'}"
            )
            return


def run_recall_gate(
    stable_url: str,
    candidate_url: str,
    store: Store,
    *,
    expect: str,
    run_id: str,
    probe: RecallProbe | None = None,
    channel: str = "http",
    org: str = SMOKE_ORG,
    user: str = SMOKE_USER,
    secrets: ChannelSecrets | None = None,
    evaluator: LLMPeer | None = None,
    model: str = "",
    timeout: float = 120.0,
    interval: float = 0.5,
    sleep: Callable[[float], None] = time.sleep,
    client: httpx.Client | None = None,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> GateResult:
    """Seed through ``stable_url``, ask through ``candidate_url``, judge, record (see the module)."""
    result = GateResult(probe or make_probe(run_id), room=f"recall-{run_id}-{token.token_hex(4)}")
    ensure_smoke_person(store, org, user)
    common: dict[str, Any] = {"secrets": secrets, "timeout": timeout, "interval": interval, "sleep": sleep}
    seed_conversation(
        stable_url, store, result, expect=expect, channel=channel, org=org, user=user, client=client, **common
    )
    if not result.problems:
        smoke = run_smoke(
            candidate_url,
            store,
            expect=expect,
            channel=channel,
            text=result.probe.question,
            org=org,
            room=result.room,
            user=user,
            event_id=f"{result.room}-recall",
            client=client,
            **common,
        )
        if smoke.turn_id:
            result.turns["recall"] = smoke.turn_id
        result.problems += [f"recall turn: {p}" for p in smoke.problems]
        if smoke.record is not None and not smoke.problems:
            reply = str(smoke.record.get("final_response") or "")
            if smoke.record.get("arm") == "legacy":
                result.verdict = not_applicable(reply)
            else:
                result.verdict = judge(result.probe, reply, evaluator=evaluator, model=model)
    result.record_path = record_check(
        store,
        result.probe,
        result.verdict,
        at=clock(),
        candidate=expect,
        problems=result.problems,
        turns=result.turns,
    )
    return result


def _evaluator(name: str | None, settings: Any) -> LLMPeer | None:
    if not name:
        return None
    from shared_lib.evals.peer import peer_spec
    from shared_lib.peers.config import load_peers
    from shared_lib.peers.factory import build_peer, usable

    spec = peer_spec(load_peers(settings.peers), name)
    if not usable(spec, settings):
        raise ConfigError(f"peer {name!r}: no API key and no base URL in the settings")
    return build_peer(spec, settings)


def report(result: GateResult) -> dict[str, Any]:
    """What the run shows an operator (the ``--report-file`` JSON)."""
    verdict = result.verdict
    return {
        "passed": result.ok,
        "code": verdict.code.value if verdict else "NOT_JUDGED",
        "message": verdict.message if verdict else "; ".join(result.problems),
        "problems": result.problems,
        "reply": verdict.reply if verdict else "",
        "evaluator": verdict.evaluator if verdict else "",
        "question": result.probe.question,
        "turns": result.turns,
        "record": result.record_path,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.recall_gate", description=__doc__.split("\n")[0])
    parser.add_argument("--stable-url", required=True, help="the ingress serving today (its service URL)")
    parser.add_argument("--candidate-url", required=True, help="the candidate ingress (its tag URL)")
    parser.add_argument("--expect-revision", required=True, help="candidate tag (c-<sha>) or revision name")
    parser.add_argument("--run-id", required=True, help="names the run's record and conversation")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for each turn's record")
    parser.add_argument("--evaluator-peer", help="a peer of the peers configuration that judges the reply")
    parser.add_argument("--report-file", type=Path, help="write the run's result here as JSON")
    parser.add_argument("--store", dest="store_choice", help="firestore|FILE.sqlite (default: settings)")
    parser.add_argument("--project")
    args = parser.parse_args(argv)
    from shared_lib.wiring.composition import operator_runtime

    try:
        rt = operator_runtime(store=args.store_choice, project=args.project)
        evaluator = _evaluator(args.evaluator_peer, rt.settings)
        result = run_recall_gate(
            args.stable_url,
            args.candidate_url,
            rt.store,
            expect=args.expect_revision,
            run_id=args.run_id,
            secrets=ChannelSecrets.from_env(os.environ),
            evaluator=evaluator,
            model=rt.settings.fast_model,
            timeout=args.timeout,
        )
    except (ConfigError, ValueError, httpx.HTTPError) as exc:
        print(f"recall_gate: {exc}", file=sys.stderr)
        return 2
    return finish(result, args.report_file)


def finish(result: GateResult, report_file: Path | None = None) -> int:
    """Print the run (stdout when it passed, stderr when not), write ``report_file``; the exit code."""
    shown = report(result)
    if report_file:
        report_file.write_text(json.dumps(shown, ensure_ascii=False, indent=2), encoding="utf-8")
    for name, turn_id in result.turns.items():
        print(f"  {name:<7} {turn_id}")
    print(f"  asked   {result.probe.question}")
    print(f"  reply   {shown['reply']}")
    if result.ok:
        print(f"recall gate passed ({shown['code']}): {shown['message']} [{result.record_path}]")
        return 0
    print(
        f"recall gate FAILED ({shown['code']}): {shown['message']}; the stable revisions keep serving"
        f" [{result.record_path}]",
        file=sys.stderr,
    )
    for problem in result.problems:
        print(f"recall gate FAILED: {problem}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
