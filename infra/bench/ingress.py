"""Ingress acknowledgement latency on the local stack (median, p99), bounded.

Sends ``--requests`` signed webhooks (rotating ChatWork, LINE, Slack, HTTP) one after
another to the running chain and times each HTTP answer: verification, dedupe and the
publish to ``turns.received`` — the part a provider waits for (Slack allows 3 s).

    python -m infra.bench.ingress --requests 200 [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from infra import local_stack
from infra.webhook_sender import build_request
from shared_lib.cli.runner import progress

CHANNELS = ("chatwork", "line", "slack", "http")
USERS = {
    "chatwork": "200001",
    "slack": "UALICE0001",
    "line": "Ualice00000000000000000000000001",
    "http": "u-suzuki",  # a person of the demo directory: the ingress refuses anyone else (403)
}


def _percentile(ordered: list[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, max(0, round(len(ordered) * q) - 1))]


def run(requests: int) -> dict[str, Any]:
    root = Path(f"/tmp/charter-bench-ingress-{uuid.uuid4().hex[:6]}")
    progress("starting the local stack…")
    state = local_stack.up(root=root, progress=progress)
    try:
        samples: dict[str, list[float]] = {c: [] for c in CHANNELS}
        with httpx.Client(timeout=30) as client:
            for i in range(requests + 8):
                channel = CHANNELS[i % len(CHANNELS)]
                room = str(100000 + i) if channel == "chatwork" else f"RB{i}"
                path, headers, body = build_request(
                    channel,
                    "こんにちは",
                    org="demo",
                    room=room,
                    user=USERS[channel],
                    event_id=uuid.uuid4().hex,
                )
                t0 = time.perf_counter()
                resp = client.post(state["ingress_url"] + path, content=body, headers=headers)
                elapsed = (time.perf_counter() - t0) * 1000
                if resp.status_code != 200:
                    raise RuntimeError(f"{channel}: {resp.status_code} {resp.text[:200]}")
                if i >= 8:  # warm-up: first requests build the process's clients
                    samples[channel].append(elapsed)
    finally:
        local_stack.down(root=root)
    every = sorted(x for xs in samples.values() for x in xs)
    return {
        "requests": len(every),
        "median_ms": round(statistics.median(every), 2),
        "p99_ms": round(_percentile(every, 0.99), 2),
        "by_channel": {
            c: {
                "median_ms": round(statistics.median(xs), 2),
                "p99_ms": round(_percentile(sorted(xs), 0.99), 2),
            }
            for c, xs in samples.items()
            if xs
        },
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="ingress acknowledgement latency on the local stack")
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    result = run(args.requests)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(
        f"ingress ack over {result['requests']} webhooks: median {result['median_ms']} ms, p99 {result['p99_ms']} ms"
    )
    for channel, r in result["by_channel"].items():
        print(f"  {channel:<9} median {r['median_ms']:>7} ms   p99 {r['p99_ms']:>7} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
