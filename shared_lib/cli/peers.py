"""``charter peers list``: the configured LLM peers and their last health (seed 001 §6).

charter peers list [--json] [--probe] [--store firestore|FILE.sqlite] [--project P]

Every peer of the settings' configuration (``CHARTER_PEERS``, else ``config/peers.json``) in
priority order: its kind (``anthropic``, ``vertex``, ``openai_compatible``), local or cloud, the
purposes it serves, its concurrency, and its last health from the store (``peer_health``:
healthy or not, when, why, the probe's latency). ``--probe`` probes every peer now (one cheap
call each, from this machine) and records the results, as the services' background probe does.

Exit codes: 0 ok; 1 ``--probe`` found a peer unhealthy; 2 no store, or a peers configuration
that does not load (or names a kind this build has no adapter for, with ``--probe``).
"""

from __future__ import annotations

import argparse
from datetime import datetime
from typing import Any

from shared_lib.cli.console import NO_STORE, json_text
from shared_lib.cli.operations import runtime_for, store_options
from shared_lib.cli.runner import fail
from shared_lib.errors import ConfigError
from shared_lib.peers.config import load_peers
from shared_lib.peers.factory import build_peer
from shared_lib.peers.health import HealthBoard
from shared_lib.peers.router import describe

EXIT_OK, EXIT_FINDING, EXIT_USAGE = 0, 1, 2


def register(sub: Any) -> None:
    peers = sub.add_parser("peers", help="the LLM peers: kind, purposes, local or cloud, last health")
    psub = peers.add_subparsers(dest="peers_command", metavar="COMMAND", required=True)
    p = psub.add_parser("list", help="every configured peer with its last health")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--probe", action="store_true", help="probe every peer now and record the results")
    store_options(p)
    p.set_defaults(func=run_list)


def run_list(args: argparse.Namespace) -> int:
    try:
        rt = runtime_for(args)
    except ConfigError:
        return fail(NO_STORE, EXIT_USAGE)
    try:
        config = load_peers(rt.settings.peers)
        peers = {s.name: build_peer(s, rt.settings) for s in config.peers} if args.probe else {}
    except ConfigError as exc:
        return fail(f"peers: {exc}", EXIT_USAGE)
    board = HealthBoard(rt.store, peers, interval=rt.settings.peer_health_seconds, clock=rt.clock)
    probed = [board.probe(name) for name in peers]
    rows = describe(config, board.records())
    if args.json:
        print(json_text({"peers": rows}))
    else:
        print(render(rows))
    return EXIT_FINDING if any(not h.healthy for h in probed) else EXIT_OK


def render(rows: list[dict[str, Any]]) -> str:
    """One line per peer: name, kind, where, purposes, then its health."""
    lines = [
        f"{'peer':<12} {'kind':<18} {'where':<6} {'health':<10} {'checked':<20} {'ms':>7}  purposes / reason"
    ]
    for row in rows:
        health = row["health"]
        state = "-" if health is None else ("healthy" if health["healthy"] else "unhealthy")
        checked = "-" if health is None else _when(health["checked_at"])
        latency = "-" if health is None else f"{health['latency_ms']:.0f}"
        reason = f"  ({health['reason']})" if health and health["reason"] else ""
        lines.append(
            f"{row['name']:<12} {row['kind']:<18} {'local' if row['local'] else 'cloud':<6} {state:<10}"
            f" {checked:<20} {latency:>7}  {','.join(row['purposes']) or '-'}{reason}"
        )
    return "\n".join(lines)


def _when(value: str) -> str:
    return datetime.fromisoformat(value).strftime("%Y-%m-%d %H:%M:%S")
