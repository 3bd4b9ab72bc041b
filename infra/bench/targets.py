"""Per function target: the modules it imports, its resident memory and its cold start.

Each target runs in a process of its own (``infra.bench.target_probe``), started the way
functions-framework starts it, with the local stack's environment (``function_env``: Firestore,
Pub/Sub, the Anthropic peer, the local embedder). Three readings per target:

* **loaded**: after ``create_app`` (the entry module and ``check_startup``, the arbiter's work):
  modules imported, VmRSS, milliseconds;
* **built**: after the process's runtime is built (the worker's first request): the same, and
  which heavy packages (LLM SDKs, numpy, the embedder, the Google clients) it holds;
* **turn** (unless ``--no-turn``): after one turn of the chain handled through the framework's
  test client. That run swaps only the adapters that would need a server (a SQLite store shared
  by the targets, the in-process bus, recording channels, a fake Anthropic server in this
  process), each target fed what the previous one published.

Figures are one run on one machine: milliseconds move with the machine's load, module counts
do not. ``tests/static/test_target_imports.py`` holds the import sets to their budget.

    python -m infra.bench.targets [--targets guardian,brain] [--runs 3] [--peers stack|default] [--no-turn] [--json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from shared_lib.cli.runner import progress

REPO = Path(__file__).resolve().parents[2]
TEXT = "田中さんに明日までに見積書のタスクをお願い🙏"
UNUSED = "127.0.0.1:9"  # an emulator address nothing listens on: building a client does not connect


def targets() -> dict[str, str]:
    """Every functions-framework target of ``topology.json`` and its kind, in chain order."""
    from shared_lib.delivery.topology import TOPOLOGY

    return {name: t.kind for name, t in TOPOLOGY.targets.items()}


def served_env(target: str, *, peers: str = "stack") -> dict[str, str]:
    """The environment ``charter local up`` gives ``target`` (its emulators never contacted):
    with ``peers="stack"`` its three LLM peers (Anthropic, Claude on Vertex AI, an
    OpenAI-compatible model), with ``"default"`` the one of ``config/peers.json`` (Anthropic)."""
    from infra.local_stack import function_env

    url = f"http://{UNUSED}"
    components: dict[str, Any] = {
        "fake_channels": {"url": url},
        "fake_llm": {"url": url},
        "pubsub": {"port": 9},
        "firestore": {"port": 9},
    }
    if peers == "stack":
        components |= {"fake_llm_fallback": {"url": url}, "fake_openai": {"url": url}}
    state = {"project": "charter-bench", "components": components}
    return function_env(state, {"CHARTER_REVISION": "stable", "FUNCTION_TARGET": target})


def turn_env(target: str, store_path: Path, llm_url: str, peers: str = "stack") -> dict[str, str]:
    """The served environment with the adapters of an in-process turn (no emulator, no network:
    the first peer is a fake Anthropic server, the fallback peers are never called)."""
    env = served_env(target, peers=peers)
    for name in ("FIRESTORE_EMULATOR_HOST", "PUBSUB_EMULATOR_HOST"):
        env.pop(name, None)
    return env | {
        "CHARTER_STORE": "sqlite",
        "CHARTER_STORE_PATH": str(store_path),
        "CHARTER_BUS": "inproc",
        "CHARTER_CHANNELS": "recording",
        "ANTHROPIC_BASE_URL": llm_url,
    }


def probe(target: str, env: dict[str, str], deliver: Path | None = None) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "infra.bench.target_probe", target]
    if deliver is not None:
        cmd += ["--deliver", str(deliver)]
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{target}: probe failed:\n{done.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def measure(names: list[str], *, turn: bool, runs: int = 1, peers: str = "stack") -> list[dict[str, Any]]:
    """Each target's readings; with ``runs`` > 1 its import and build times are the fastest of
    the runs (the one least disturbed by other work on the machine), the rest the first run's."""
    rows = []
    for name in names:
        progress(f"{name}: import and build ({runs} run{'s' if runs > 1 else ''})")
        results = [probe(name, served_env(name, peers=peers)) for _ in range(runs)]
        row = results[0]
        for phase in ("loaded", "built"):
            for clock in ("ms", "cpu_ms"):
                row[phase][clock] = min(r[phase][clock] for r in results)
        rows.append(row)
    if turn:
        turns = run_turn(names, peers)
        for row in rows:
            if row["target"] in turns:
                row["turn"] = turns[row["target"]]["turn"]
                row["statuses"] = turns[row["target"]]["statuses"]
    return rows


def run_turn(names: list[str], peers: str = "stack") -> dict[str, dict[str, Any]]:
    """One turn along the chain, each target in its own process; each target's probe result."""
    from infra.fake_llm.server import FakeAnthropicServer
    from infra.webhook_sender import build_request
    from shared_lib.adapters.sqlite_store import SQLiteStore
    from shared_lib.channels.secrets import ChannelSecrets
    from shared_lib.delivery.topology import TOPOLOGY
    from shared_lib.demo_data import DEMO_ORG, DEPARTMENT_NAMES, DEPARTMENT_READINGS, DEPARTMENTS, PEOPLE
    from shared_lib.flags import FLAGS_DOC, flags_store_doc, load_flags_file
    from shared_lib.tools.directory import seed_directory

    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="charter-bench-targets-") as tmp:
        store_path = Path(tmp) / "store.sqlite"
        store = SQLiteStore(store_path)
        store.set(FLAGS_DOC, flags_store_doc(load_flags_file()))
        seed_directory(store, DEMO_ORG, PEOPLE, DEPARTMENTS, DEPARTMENT_NAMES, DEPARTMENT_READINGS)
        llm = FakeAnthropicServer().start()
        try:
            env = turn_env("ingress", store_path, llm.url, peers)
            path, headers, body = build_request(
                "http",
                TEXT,
                org=DEMO_ORG,
                user=str(PEOPLE[1]["user_id"]),
                secrets=ChannelSecrets.from_env(env),
            )
            pending: dict[str, list[dict[str, Any]]] = {
                "ingress": [{"webhook": [path, headers, body.decode()]}]
            }
            order = ["ingress", *[n for n in TOPOLOGY.targets if n not in ("ingress", "admin")]]
            for name in order:
                deliveries = pending.pop(name, [])
                if name not in names or not deliveries:
                    continue
                progress(f"{name}: {len(deliveries)} deliveries of the turn")
                file = Path(tmp) / f"{name}.json"
                file.write_text(json.dumps(deliveries, ensure_ascii=False), encoding="utf-8")
                results[name] = probe(name, turn_env(name, store_path, llm.url, peers), file)
                for i, message in enumerate(results[name]["published"]):
                    for sub_name, sub in TOPOLOGY.subscriptions_of(message["topic"]).items():
                        pending.setdefault(sub.target, []).append(
                            {**message, "subscription": sub_name, "message_id": f"{name}-{i}"}
                        )
        finally:
            llm.stop()
    return results


def table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| target | modules (loaded / built) | RSS MiB (loaded / built) | import ms (CPU) | build ms (CPU) "
        "| heavy packages held | after a turn (SQLite, in-process bus): modules, RSS MiB |"
    )
    lines = [head, "|---|---|---|---|---|---|---|"]
    for r in rows:
        turn = r.get("turn")
        after = f"{turn['modules']}, {turn['rss_mib']:.0f}" if turn else "—"
        lines.append(
            f"| {r['target']} | {r['loaded']['modules']} / {r['built']['modules']} "
            f"| {r['loaded']['rss_mib']:.0f} / {r['built']['rss_mib']:.0f} "
            f"| {r['loaded']['ms']:.0f} ({r['loaded']['cpu_ms']:.0f}) | {r['built']['ms']:.0f} ({r['built']['cpu_ms']:.0f}) "
            f"| {', '.join(r['built']['heavy']) or '—'} | {after} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m infra.bench.targets", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--targets", help="comma-separated (default: every target of topology.json)")
    parser.add_argument("--no-turn", action="store_true", help="only import and build, no turn")
    parser.add_argument("--runs", type=int, default=1, help="import and build runs per target (fastest kept)")
    parser.add_argument(
        "--peers",
        choices=("stack", "default"),
        default="stack",
        help="the local stack's three LLM peers, or one",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    names = list(targets())
    if args.targets:
        wanted = args.targets.split(",")
        unknown = sorted(set(wanted) - set(names))
        if unknown:
            parser.error(f"unknown targets: {', '.join(unknown)}")
        names = [n for n in names if n in wanted]
    rows = measure(names, turn=not args.no_turn, runs=args.runs, peers=args.peers)
    for row in rows:
        row.pop("published", None)
    print(json.dumps(rows, ensure_ascii=False, indent=2) if args.json else table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
