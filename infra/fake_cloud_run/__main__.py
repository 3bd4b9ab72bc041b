"""Command line: ``python -m infra.fake_cloud_run [--port N] [--token T] [--seed FILE.json]``.

Serves the fake Cloud Run Admin API on 127.0.0.1 until SIGTERM or SIGINT, after printing (and
flushing) one line: ``fake-cloud-run listening on http://127.0.0.1:N``. ``--seed`` is a JSON list
of ``FakeCloudRun.add_service`` keyword arguments.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

from infra.fake_cloud_run.server import FakeCloudRun


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m infra.fake_cloud_run", description="Fake Cloud Run Admin API v2 on 127.0.0.1."
    )
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free port)")
    parser.add_argument("--token", default="fake-cloud-run-token", help="the bearer token it accepts")
    parser.add_argument("--seed", type=Path, help="JSON list of services (add_service keyword arguments)")
    args = parser.parse_args(argv)
    stop = threading.Event()

    def _on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    with FakeCloudRun(token=args.token, port=args.port) as fake:
        for service in json.loads(args.seed.read_text()) if args.seed else []:
            fake.add_service(**service)
        print(f"fake-cloud-run listening on {fake.url}", flush=True)
        while not stop.wait(0.5):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
