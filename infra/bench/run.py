"""Per-turn orchestration overhead: the chained local stack vs in-process, one run.

Both arms answer the same short conversation turn with the fake LLM answering at once,
so the difference is the cost of the chain (Pub/Sub push hops, Firestore claims and
receipts) versus plain function calls. Prints median and p95 per turn for each arm and
their ratio; with ``--floor DIR`` it also runs the bare chain floor
(``shared/bench/chain_floor/run.py``) in the same run and prints product/floor ratios.
Bounded: ``--turns`` sequential turns per arm (default 30) after a short warm-up.

    python -m infra.bench.run --turns 30 [--floor ../shared/bench/chain_floor] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
import urllib.request
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from shared_lib.cli.runner import progress

TEXT = "こんにちは"


def _stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p95 = ordered[max(0, round(len(ordered) * 0.95) - 1)]
    return {"median_ms": round(statistics.median(ordered), 2), "p95_ms": round(p95, 2), "n": len(ordered)}


def bench_inprocess(turns: int) -> dict[str, float]:
    from infra.fake_llm.server import FakeAnthropicServer
    from shared_lib.demo_data import DEMO_ORG, seed_demo_directory
    from shared_lib.layers.ingress import accept
    from shared_lib.turn.inbound import InboundMessage
    from shared_lib.wiring.composition import build_runtime, wire_inprocess
    from shared_lib.wiring.push import settle_heap

    with FakeAnthropicServer() as server:
        rt = build_runtime(
            {
                "CHARTER_ENV": "test",
                "CHARTER_CHANNELS": "recording",
                "ANTHROPIC_BASE_URL": server.url,
                "ANTHROPIC_API_KEY": "bench",
            }
        )
        wire_inprocess(rt)
        seed_demo_directory(rt.store)
        settle_heap()  # as a served function does once its runtime is built
        samples = []
        for i in range(turns + 3):
            msg = InboundMessage(
                channel="http",
                org_id=DEMO_ORG,
                room_id=f"bench-{i}",
                user_id="u-suzuki",
                text=TEXT,
                message_id=f"m{i}",
                event_id=uuid.uuid4().hex,
                received_at=datetime.now(UTC),
            )
            t0 = time.perf_counter()
            accept(rt, msg)
            if i >= 3:
                samples.append((time.perf_counter() - t0) * 1000)
    return _stats(samples)


def _sent_count(url: str) -> int:
    with urllib.request.urlopen(url + "/_admin/sent", timeout=10) as resp:
        return len(json.loads(resp.read()))


def bench_stack(turns: int) -> dict[str, float]:
    from infra import local_stack
    from infra.webhook_sender import send

    root = Path(f"/tmp/charter-bench-{uuid.uuid4().hex[:6]}")
    progress(f"stack arm: starting the local stack, then {turns} turns…")
    state = local_stack.up(root=root, progress=progress)
    try:
        fake = state["components"]["fake_channels"]["url"]
        samples = []
        for i in range(turns + 3):
            before = _sent_count(fake)
            t0 = time.perf_counter()
            resp = send(state["ingress_url"], "http", TEXT, org="demo", room=f"bench-{i}", user="u-suzuki")
            if resp.status != 200:
                raise RuntimeError(f"webhook rejected: {resp.status} {resp.body}")
            deadline = time.monotonic() + 60
            while _sent_count(fake) <= before:
                if time.monotonic() > deadline:
                    raise RuntimeError("no reply within 60 s")
                time.sleep(0.005)
            if i >= 3:
                samples.append((time.perf_counter() - t0) * 1000)
        return _stats(samples)
    finally:
        local_stack.down(root=root)


def bench_floor(floor_dir: Path, turns: int) -> dict[str, Any]:
    out = subprocess.run(
        [
            sys.executable,
            str(floor_dir / "run.py"),
            "--hops",
            "8",
            "--seq",
            str(turns),
            "--burst",
            "40",
            "--keys",
            "10",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=30)
    ap.add_argument("--floor", type=Path, help="directory of shared/bench/chain_floor to compare with")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    progress(f"in-process arm: {args.turns} turns…")
    inprocess = bench_inprocess(args.turns)
    result: dict[str, Any] = {"turns": args.turns, "inprocess": inprocess, "stack": bench_stack(args.turns)}
    result["stack_over_inprocess_median"] = round(
        result["stack"]["median_ms"] / result["inprocess"]["median_ms"], 1
    )
    result["stack_over_inprocess_p95"] = round(result["stack"]["p95_ms"] / result["inprocess"]["p95_ms"], 1)
    if args.floor:
        floor = bench_floor(args.floor, args.turns)
        result["floor"] = floor
        result["stack_over_floor_median"] = round(result["stack"]["median_ms"] / floor["seq_median_ms"], 2)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(
        f"in-process turn : median {result['inprocess']['median_ms']:>8.2f} ms   p95 {result['inprocess']['p95_ms']:>8.2f} ms"
    )
    print(
        f"chained (stack) : median {result['stack']['median_ms']:>8.2f} ms   p95 {result['stack']['p95_ms']:>8.2f} ms"
    )
    print(
        f"ratio stack/in-process: median {result['stack_over_inprocess_median']}x, p95 {result['stack_over_inprocess_p95']}x"
    )
    if "floor" in result:
        print(
            f"bare 8-hop floor: median {result['floor']['seq_median_ms']} ms -> product/floor {result['stack_over_floor_median']}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
