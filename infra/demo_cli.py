"""``charter demo``: the sample conversation through every layer.

Embedded (default): in-process bus, a SQLite store kept in ``--keep DIR`` (``.charter/demo``)
so the operator commands can read the demo's records afterwards, the real Anthropic adapter
pointed at Claude when ``ANTHROPIC_API_KEY`` is set, else at the built-in scripted model (the
fake Anthropic server on 127.0.0.1). ``--stack`` sends the same conversation as signed
webhooks to the running local stack and reads the records back from the emulator.

The demo fails (exit 1) when a reply is missing or shows what a user must never read
(``leaks``): a mask placeholder (「[PHONE_1]」), an internal tool or parameter name, an ISO date.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from shared_lib.demo_data import CONVERSATION, DEMO_ORG, DEMO_ROOM, PEOPLE, seed_demo_directory
from shared_lib.errors import CharterError, ConfigError
from shared_lib.ports import Store
from shared_lib.turn.inbound import InboundMessage

_NAMES = {p["user_id"]: p["name"] for p in PEOPLE}
PLACEHOLDER = re.compile(r"\[[A-Z][A-Z_]*(?:_\d+)?\]")
_ISO_DATE = re.compile(r"(?<!\d)\d{4}-\d{2}-\d{2}(?!\d)")


def leaks(reply: str) -> list[str]:
    """What a reply shows that no user may read: placeholders, internal names, ISO dates."""
    from shared_lib.wiring.features import tool_registry

    registry = tool_registry()
    internal = {spec.name for spec in registry} | {f for spec in registry for f in spec.params.model_fields}
    words = set(re.findall(r"[A-Za-z][A-Za-z0-9_]*", reply))
    return [*PLACEHOLDER.findall(reply), *sorted(words & internal), *_ISO_DATE.findall(reply)]


def _step_summary(step: dict[str, Any]) -> dict[str, Any]:
    """One step of a turn as the demo shows it: what was proposed, decided and done; a result
    as the phrasing step reads it (``tools.display``: 「11月25日（水）」, labels)."""
    from shared_lib.tools.display import shown_result
    from shared_lib.wiring.features import tool_registry

    registry = tool_registry()
    return {
        "step": step.get("step"),
        "route": step.get("route"),
        "proposal": {"output_type": step.get("output_type"), "tools": step.get("tool_calls") or []},
        "verdict": {"action": step.get("verdict"), "reason_code": step.get("verdict_reason")},
        "authorization": {
            "result": step.get("authorization"),
            "reason_code": step.get("authorization_reason"),
        },
        "results": [
            {
                "tool": r.get("tool_name"),
                "ok": r.get("ok"),
                "error_code": r.get("error_code"),
                "shown": shown_result(registry, str(r.get("tool_name")), r.get("result")),
            }
            for r in step.get("results") or []
        ],
        "needs_next_loop": step.get("needs_next_loop"),
    }


def sent_reply(calls: list[dict[str, Any]], turn_id: str | None) -> str | None:
    """The reply a turn's person read, from the fake channel server's calls (its parts in order),
    or ``None`` when none was sent for it. The turn's record keeps the reply masked (a log): a
    person's own values given back (「私の携帯は090-…」) read there as placeholders."""
    if not turn_id:
        return None
    parts = sorted(
        (
            (int(body.get("part") or 1), str(body.get("text") or ""))
            for call in calls
            if isinstance(body := call.get("body"), dict)
            and (body.get("turn_id") == turn_id or str(body.get("turn_id") or "").startswith(f"{turn_id}-"))
        ),
    )
    return "\n".join(dict.fromkeys(text for _, text in parts)) or None


def turn_summary(
    record: dict[str, Any], speaker: str, text: str, *, sent: str | None = None
) -> dict[str, Any]:
    """What the demo prints for one turn, from its observability record; ``sent``: the reply as
    the person read it (``sent_reply``), shown instead of the record's masked one."""
    loop, route = record.get("loop") or {}, record.get("route") or {}
    return {
        "turn_id": record.get("turn_id"),
        "speaker": _NAMES.get(speaker, speaker),
        "text": text,
        "reply": sent if sent is not None else record.get("final_response"),
        "kind": record.get("response_kind"),
        "arm": record.get("arm"),
        "model": record.get("llm_model"),
        "output_type": record.get("output_type"),
        "reasoning": record.get("llm_reasoning"),
        "confidence": record.get("llm_confidence"),
        "tools": record.get("selected_tools"),
        "guardian": {"action": record.get("guardian_action"), "reason_code": record.get("guardian_reason")},
        "authorization": {"result": record.get("auth_result"), "reason_code": record.get("auth_reason")},
        "execution_success": record.get("execution_success"),
        "usage": record.get("usage"),
        "cost_usd": record.get("cost_usd"),
        "errors": [e.get("code") for e in record.get("errors", [])],
        "trail": [
            {k: e.get(k) for k in ("layer", "outcome", "reason_code", "duration_ms")}
            for e in record.get("trail", [])
        ],
        "route": {k: route.get(k) for k in ("initial_route", "source", "rule_id")} if route else None,
        "steps": [_step_summary(s) for s in record.get("steps") or []],
        "loop": {k: loop.get(k) for k in ("stop_reason", "stop_detail", "reroute_used", "worker_calls")},
        **agent_summary(record),
    }


FIVE = ("goal", "why_now", "constraints", "plan_brief", "open_questions")


def agent_summary(record: dict[str, Any]) -> dict[str, Any]:
    """Seed 004 in the demo: the agent state after the turn (the fixed five, step and status),
    the transition taken (at most one), the refused ones, and the turn's approval events with
    their job ids."""
    agent = record.get("agent") or {}
    events = (record.get("loop") or {}).get("events") or []
    return {
        "agent_state": {k: agent.get(k) for k in (*FIVE, "step", "status", "pending_gate")},
        "transition": list(agent.get("transition") or []),
        "refused_transitions": list(agent.get("refused") or []),
        "approval_events": [
            {
                "event": e["event"],
                "step": e.get("step"),
                "job_id": e.get("job_id") or (e.get("other") or {}).get("job_id"),
                "status": e.get("approval_status") or (e.get("other") or {}).get("approval_status"),
            }
            for e in events
            if str(e.get("event") or "").startswith("approval.")
        ],
    }


def _print_turn(i: int, s: dict[str, Any]) -> None:
    print(f"\n── turn {i} ─ {s['speaker']}: {s['text']}")
    print(f"   reply ({s['kind']}): " + str(s["reply"]).replace("\n", "\n          "))
    if s.get("confidence") is not None and s.get("arm") == "llm":
        print(
            f"   proposal: {s['output_type']} confidence={s['confidence']} reasoning: {str(s['reasoning'])[:120]}"
        )
    route = s.get("route") or {}
    if route.get("initial_route") not in (None, "CHAT"):
        print(f"   route: {route['initial_route']} by {route['source']} ({route.get('rule_id') or '-'})")
    if len(s["steps"]) > 1:
        print("   steps: " + _steps_line(s))
    state = s["agent_state"]
    if state.get("step"):
        moved = (
            " ".join(f"{t['from_step']}→{t['to_step']} ({t['by']})" for t in s["transition"])
            or "no transition"
        )
        print(f"   agent: {state['step']}/{state['status']} {moved}; goal: {state.get('goal') or '-'}")
    for e in s["approval_events"]:
        print(f"   approval: {e['event']} job {e['job_id'] or '-'}")
    for e in s["trail"]:
        print(
            f"   · {e['layer']:<12} {e['outcome']:<16} {e['reason_code'] or '':<28} {e['duration_ms']:>8.2f} ms"
        )


def _steps_line(s: dict[str, Any]) -> str:
    """A turn's steps on one line: ``1 chatwork_task_search allow/allowed ok → 2 …  · stop done``."""

    def one(step: dict[str, Any]) -> str:
        tools = ",".join(t["tool_name"] for t in step["proposal"]["tools"]) or step["proposal"]["output_type"]
        results = step["results"]
        done = "-" if not results else ("ok" if all(r["ok"] for r in results) else "failed")
        return f"{step['step']} {tools} {step['verdict']['action']}/{step['authorization']['result']} {done}"

    return " → ".join(one(step) for step in s["steps"]) + f"  · stop {s['loop'].get('stop_reason') or '-'}"


def _embedded(args: argparse.Namespace) -> list[dict[str, Any]]:
    from infra.embedded import embedded_product
    from shared_lib.layers.ingress import accept

    keep = Path(args.keep).resolve()
    keep.mkdir(parents=True, exist_ok=True)
    db = keep / "demo.sqlite"
    for stale in keep.glob("demo.sqlite*"):  # every demo starts from an empty store
        stale.unlink()
    with embedded_product(db) as (rt, banner, sent):
        seed_demo_directory(rt.store)
        if not args.json:
            print(banner)
        out = []
        for i, (speaker, text) in enumerate(CONVERSATION, 1):
            msg = InboundMessage(
                channel="http",
                org_id=DEMO_ORG,
                room_id=DEMO_ROOM,
                user_id=speaker,
                text=text,
                message_id=f"demo-{i}",
                event_id=f"demo-{time.time_ns()}-{i}",
                received_at=datetime.now(UTC),
            )
            turn_id = accept(rt, msg)
            record = _record(rt.store, turn_id)
            out.append(turn_summary(record, speaker, text, sent=sent_reply(sent(), turn_id)))
            if not args.json:
                _print_turn(i, out[-1])
        if args.json:
            print(
                json.dumps(
                    {"mode": "embedded", "llm": banner, "turns": out},
                    ensure_ascii=False,
                    indent=2,
                    default=str,
                )
            )
        return out


def _stack_sent(state: dict[str, Any]) -> list[dict[str, Any]]:
    """What the running stack's fake channel server received."""
    url = state["components"]["fake_channels"]["url"]
    with urllib.request.urlopen(f"{url}/_admin/sent", timeout=10) as resp:
        calls: list[dict[str, Any]] = json.loads(resp.read())
    return calls


def _record(
    store: Store, turn_id: str | None, timeout: float = 0.0, *, org: str = DEMO_ORG
) -> dict[str, Any]:
    end = time.monotonic() + timeout
    while True:
        rec = store.get(f"orgs/{org}/observability/{turn_id}") if turn_id else None
        if rec is not None or time.monotonic() >= end:
            return rec or {"turn_id": turn_id, "final_response": None, "trail": [], "errors": []}
        time.sleep(0.2)


def _stack(args: argparse.Namespace) -> list[dict[str, Any]]:
    from infra import local_stack
    from infra.webhook_sender import send

    st = local_stack.status()
    if not st["running"]:
        raise ConfigError("the local stack is not running: start it with `charter local up`")
    from shared_lib.wiring.composition import operator_runtime

    store = operator_runtime(
        store="firestore", project=st["project"], home=local_stack.STATE_DIR.parent
    ).store
    out = []
    if not args.json:
        print(f"local stack: {st['ingress_url']} (scripted model on the fake Anthropic API)")
    for i, (speaker, text) in enumerate(CONVERSATION, 1):
        resp = send(st["ingress_url"], "http", text, org=DEMO_ORG, room=DEMO_ROOM, user=speaker)
        status, body = resp.status, resp.body
        if status != 200 or not body.get("turn_ids"):
            raise CharterError(f"webhook rejected: {status} {body}")
        record = _record(store, body["turn_ids"][0], timeout=60)
        out.append(
            turn_summary(record, speaker, text, sent=sent_reply(_stack_sent(st), record.get("turn_id")))
        )
        if not args.json:
            _print_turn(i, out[-1])
    if args.json:
        print(json.dumps({"mode": "stack", "turns": out}, ensure_ascii=False, indent=2, default=str))
    return out


def _run(args: argparse.Namespace) -> int:
    turns = _stack(args) if args.stack else _embedded(args)
    failed = [t for t in turns if not t.get("reply")]
    leaked = {t["turn_id"]: found for t in turns if (found := leaks(str(t.get("reply") or "")))}
    for turn_id, found in leaked.items():
        print(f"turn {turn_id}: the reply shows {', '.join(found)}", file=sys.stderr)
    return 1 if failed or leaked else 0


def _folder(text: str) -> str:
    """An argparse type: a folder, or a path where one can be made (not a file)."""
    if Path(text).exists() and not Path(text).is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a file, not a folder")
    return text


def register(sub: Any) -> None:
    p = sub.add_parser("demo", help="run the sample conversation through every layer")
    p.add_argument(
        "--stack", action="store_true", help="through the running local stack instead of in-process"
    )
    p.add_argument("--json", action="store_true", help="print the turns as JSON")
    p.add_argument(
        "--keep",
        type=_folder,
        metavar="DIR",
        default=".charter/demo",
        help="where the embedded demo keeps its records (a SQLite store the operator commands read "
        "afterwards: `charter turns list`); default .charter/demo",
    )
    p.set_defaults(func=_run)
