"""Where a burst's CPU goes per function: a summary of ``burst --profile DIR``'s py-spy samples.

Each ``DIR/{target}.txt`` holds collapsed stacks (``frame;frame;… count``). A sample whose
innermost frame waits (a lock, a queue, a selector) is "waiting": py-spy counts a thread
that is about to block. Any other sample is put in the bucket of the innermost frame that
names one (the Firestore client, the Pub/Sub client, gRPC, pydantic, JSON, logging, the
HTTP server, the LLM client, …), else "charter code"; the charter function it ran under is the innermost ``shared_lib`` frame.

    python -m infra.bench.profile DIR [--top 8] [--json]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

# (bucket, pattern on a frame's file path), innermost match wins
BUCKETS: tuple[tuple[str, str], ...] = (
    ("firestore client", r"google/cloud/firestore"),
    ("pub/sub client", r"google/cloud/pubsub"),
    ("grpc", r"(^|/)grpc/|grpc_status|google/api_core"),
    ("protobuf", r"google/protobuf|proto/(marshal|message)"),
    ("pydantic", r"(^|/)pydantic(_core)?/"),
    ("json", r"(^|/)json/"),
    ("logging", r"(^|/)logging/|shared_lib/logs\.py"),
    ("llm client (anthropic, httpx)", r"(^|/)(anthropic|httpx2?|httpcore2?|h11)/"),
    ("http server (gunicorn, flask, werkzeug)", r"(^|/)(gunicorn|flask|werkzeug|functions_framework)/"),
    ("crypto", r"(^|/)cryptography/|hmac\.py|hashlib"),
    ("ssl, sockets", r"ssl\.py|socket\.py|selectors\.py"),
)
# a sample whose innermost frame waits (a lock, a queue, a selector, an idle pool thread)
WAITING = re.compile(r"threading\.py|selectors\.py|queue\.py|concurrent/futures/thread\.py")
_FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^:]*)(?::(?P<line>\d+))?\)$")


def _frames(stack: str) -> list[tuple[str, str]]:
    out = []
    for frame in stack.split(";"):
        m = _FRAME.match(frame.strip())
        out.append((m["func"], m["file"]) if m else (frame.strip(), ""))
    return out


def summarise(path: Path, top: int = 8) -> dict[str, Any]:
    buckets: Counter[str] = Counter()
    charter: Counter[str] = Counter()
    total = 0
    for line in path.read_text(errors="replace").splitlines():
        stack, _, n = line.rpartition(" ")
        if not n.isdigit():
            continue
        count = int(n)
        total += count
        frames = _frames(stack)
        bucket = "charter code"
        if frames and WAITING.search(frames[-1][1]):
            bucket = "waiting (locks, queues, selectors)"
        for _func, file in reversed(frames if bucket == "charter code" else []):
            hit = next((name for name, pattern in BUCKETS if re.search(pattern, file)), None)
            if hit:
                bucket = hit
                break
        buckets[bucket] += count
        own = next(
            (
                f"{file.split('shared_lib/')[-1]}:{func}"
                for func, file in reversed(frames)
                if "shared_lib/" in file
            ),
            "(outside charter code)",
        )
        charter[own] += count
    share = lambda c: round(100 * c / total, 1) if total else 0.0  # noqa: E731
    return {
        "samples": total,
        "buckets_pct": {k: share(v) for k, v in buckets.most_common()},
        "charter_functions_pct": {k: share(v) for k, v in charter.most_common(top)},
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m infra.bench.profile", description=__doc__.split("\n")[0])
    p.add_argument("directory", type=Path)
    p.add_argument("--top", type=int, default=8)
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    report = {f.stem: summarise(f, a.top) for f in sorted(a.directory.glob("*.txt"))}
    if a.json:
        print(json.dumps(report, ensure_ascii=False))
        return 0
    for target, row in report.items():
        print(f"== {target}: {row['samples']} samples")
        for name, pct in row["buckets_pct"].items():
            print(f"   {pct:5.1f}%  {name}")
        print("   under:", ", ".join(f"{k} {v}%" for k, v in row["charter_functions_pct"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
