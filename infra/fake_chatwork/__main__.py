"""Command line: ``python -m infra.fake_chatwork --port N [--token T]``.

Serves the fake ChatWork task API on 127.0.0.1 until SIGTERM or SIGINT, after printing
(and flushing) one line: ``fake-chatwork listening on http://127.0.0.1:N``.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from types import FrameType

from infra.fake_chatwork.server import DEFAULT_TOKEN, ChatWorkTasksApp, FakeChatWorkServer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m infra.fake_chatwork", description="Fake ChatWork task API on 127.0.0.1."
    )
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free port)")
    parser.add_argument("--token", default=DEFAULT_TOKEN, help="the X-ChatWorkToken to accept")
    args = parser.parse_args(argv)
    stop = threading.Event()

    def _on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    with FakeChatWorkServer(ChatWorkTasksApp(args.token), port=args.port) as server:
        print(f"fake-chatwork listening on {server.url}", flush=True)
        while not stop.wait(0.5):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
