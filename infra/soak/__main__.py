"""``python -m infra.soak --turns N --kill-rate R --llm-fault-rate F --redelivery-rate D [--poison-rate P] [--seed S] [--json]``

Runs N turns on the local stack while SIGKILLing random chained layers (rate R per turn,
each kill made while a turn holds that layer's claim, the layer restarted as ``charter local
restart --kill`` does), injecting LLM faults into a fraction F of the turns (some on the first
peer only, some on every peer: those must be answered with the degraded reply), sending a
fraction D of the webhooks twice and poisoning a fraction P (a layer fails them every time:
they must be dead-lettered). Reports every webhook sent and each planned turn's fate (answered
once, duplicated, lost, unaccepted, dead-lettered), duplicate, missing and unexpected effects,
foreign replies, dead letters, degraded replies per planned outage and, per kill, whether it hit
a turn in flight and that turn's recovery time. Exit 0 when the run is ok (the report's
``failures`` is empty: the counts reconcile, nothing lost, repeated, missing or foreign, only
the poisoned turns dead-lettered, every all-peer outage degraded, a kill hit a turn in flight),
1 otherwise, 2 for bad arguments or a stack that did not start.

By default it starts its own stack (in a temporary folder, with the fake ChatWork task API,
fault injection and the rollback guard off: the planned LLM faults must not roll the LLM arm
back, which would change every later turn's expected answer) and stops it at the end, also when interrupted; ``--stack-dir`` uses a running
stack's ``.charter/local`` instead (its layers get restarted; nothing else of it is stopped).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from infra import local_stack
from infra.emulators import stop_on_sigterm
from infra.soak.run import Options, Soak, hold_the_llm_arm


def _rate(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError("a rate is between 0 and 1")
    return value


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m infra.soak", description=__doc__.splitlines()[0].strip("`"))
    p.add_argument("--turns", type=_positive, required=True)
    p.add_argument("--kill-rate", type=_rate, default=0.0, help="layer kills per turn sent (0-1)")
    p.add_argument("--llm-fault-rate", type=_rate, default=0.0, help="share of turns with an LLM fault")
    p.add_argument("--redelivery-rate", type=_rate, default=0.0, help="share of webhooks sent twice")
    p.add_argument("--poison-rate", type=_rate, default=0.0, help="share of turns a layer always fails")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--concurrency", type=_positive, default=8, help="turns in flight at most")
    p.add_argument("--conversations", type=_positive, help="rooms the turns go to (default: turns / 3)")
    p.add_argument(
        "--turn-timeout", type=float, default=180.0, help="seconds before an unanswered turn is lost"
    )
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds for the whole run")
    p.add_argument("--stack-dir", type=Path, help="a running stack's .charter/local (default: start one)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    return p


def _print(report: dict[str, Any]) -> None:
    hooks = report["webhooks"]
    refused = ", ".join(f"{n} × {status}" for status, n in hooks["refused_by_status"].items()) or "none"
    lines = [
        ("turns planned", report["turns"]),
        (
            "webhooks sent",
            f"{hooks['sent']} ({hooks['redeliveries']} planned redeliveries): {hooks['accepted']} accepted, "
            f"{hooks['deduplicated']} deduplicated, {hooks['refused']} refused ({refused}), "
            f"{hooks['timed_out']} timed out, {hooks['unreachable']} unreachable",
        ),
        ("first deliveries", ", ".join(f"{n} {k}" for k, n in sorted(report["resolutions"].items()))),
        ("turn fates", ", ".join(f"{n} {k}" for k, n in report["fates"].items())),
        (
            "replies",
            f"{report['replies']['received']} received, {report['replies']['ours']} to our turns, "
            f"{report['foreign_replies']} foreign, {report['resent_replies']} resent under the same key",
        ),
        (
            "duplicates",
            f"{report['duplicate_turns']} turns, {report['duplicate_replies']} replies, "
            f"{report['duplicate_effects']} effects",
        ),
        (
            "effects",
            f"{json.dumps(report['effects'])} for {report['effect_turns']} planned: "
            f"{report['missing_effect_count']} missing, {report['unexpected_effect_count']} unexpected",
        ),
        ("dead letters", f"{report['dead_letters']} ({report['expected_dead_letters']} planned)"),
        ("llm faults", report["llm_faults"]),
        (
            "degraded replies",
            f"{report['degraded_replies']}; outages: "
            + (
                ", ".join(
                    f"turn {o['turn']} {o['fault']} {'degraded' if o['degraded'] else 'answered'}"
                    f"{' (must degrade)' if o['must_degrade'] else ''}"
                    for o in report["outages"]
                )
                or "none"
            ),
        ),
        (
            "kills",
            f"{report['kills']}, {report['kills_in_flight']} hit a turn in flight, "
            f"{report['kill_errors']} did not come back",
        ),
    ]
    lines += [
        (
            f"  kill {k['layer']}" + (" (follow-up)" if k["follow_up"] else ""),
            f"at {k['at_seconds']} s, "
            + (
                f"hit turns {k['turns_hit']}, recovered in {k['recovery_seconds']} s"
                if k["in_flight"]
                else f"nothing in flight (waited {k['waited_seconds']} s)"
            )
            + f", restart {k['restart_seconds']} s"
            + (f", ERROR {k['error']}" if k["error"] else ""),
        )
        for k in report["kill_log"]
    ]
    lines += [
        ("recovery seconds", report["recovery_seconds"]),
        ("latency seconds", report["latency_seconds"]),
        ("duration seconds", report["duration_seconds"]),
    ]
    for key, value in lines:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        print(f"{key:<20} {text}")
    for d in report["unplanned_degraded"]:
        print(
            f"{'  unplanned degraded':<20} turn {d['turn']} taken at {d['taken_at_seconds']} s, "
            f"answered at {d['answered_at_seconds']} s: {d['reply']}"
        )
    if report["rolled_back"]:
        print(f"{'rolled back':<20} {report['rolled_back']}")
    for failure in report["failures"]:
        print(f"{'FAILED':<20} {failure}")
    print(
        f"{'result':<20} "
        + ("OK: every webhook accounted for, nothing lost, repeated or missing" if report["ok"] else "FAILED")
    )


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    options = Options(
        turns=args.turns,
        kill_rate=args.kill_rate,
        llm_fault_rate=args.llm_fault_rate,
        redelivery_rate=args.redelivery_rate,
        seed=args.seed,
        concurrency=args.concurrency,
        conversations=args.conversations,
        turn_timeout=args.turn_timeout,
        timeout=args.timeout,
        poison_rate=args.poison_rate,
    )
    own = args.stack_dir is None
    scratch = Path(tempfile.mkdtemp(prefix="charter-soak-")) if own else None
    root = scratch / ".charter" / "local" if scratch else args.stack_dir.resolve()
    try:
        if own:
            stop_on_sigterm(lambda: local_stack.down(root=root))
            state = local_stack.up(root=root, chatwork_tasks=True, flags_ttl=1.0, fault_injection=True)
        else:
            state = local_stack.load_state(root)
            if not state.get("ready"):
                print(f"soak: no running stack in {root}", file=sys.stderr)
                return 2
            comps = state["components"]
            os.environ["FIRESTORE_EMULATOR_HOST"] = f"127.0.0.1:{comps['firestore']['port']}"
            os.environ["PUBSUB_EMULATOR_HOST"] = f"127.0.0.1:{comps['pubsub']['port']}"
        soak = Soak(options, state, root)
        if own:
            hold_the_llm_arm(soak.store)
        report = soak.run()
    except RuntimeError as exc:
        print(f"soak: {exc}", file=sys.stderr)
        return 2
    finally:
        if own:
            # the process groups of the stack at the end (restarts replaced the killed ones): checkable
            started = [int(c["pid"]) for c in local_stack.load_state(root).get("components", {}).values()]
            local_stack.down(root=root)
            if scratch is not None:
                shutil.rmtree(scratch, ignore_errors=True)
    if own:
        report["stopped_pids"] = started
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2, default=str))
    else:
        _print(report)
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
