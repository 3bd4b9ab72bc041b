"""Command line: ``python -m infra.fake_llm --port N [--scenario FILE]``.

Serves the fake Anthropic API on 127.0.0.1 until SIGTERM or SIGINT, after printing (and
flushing) one line: ``fake-anthropic listening on http://127.0.0.1:N``.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

from infra.fake_llm.scenario import Scenario, ScenarioError
from infra.fake_llm.server import FakeAnthropicServer


def _parse_args(argv: list[str] | None, prog: str, description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free port)")
    parser.add_argument("--scenario", type=Path, help="scenario TOML file (default: scripted model only)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    return serve(
        argv,
        FakeAnthropicServer,
        "fake-anthropic",
        "python -m infra.fake_llm",
        "Fake Anthropic Messages API on 127.0.0.1.",
    )


def serve(
    argv: list[str] | None, server_class: type[FakeAnthropicServer], label: str, prog: str, description: str
) -> int:
    """Parse ``--port`` / ``--scenario``, serve ``server_class`` until SIGTERM or SIGINT (also
    ``python -m infra.fake_openai``)."""
    args = _parse_args(argv, prog, description)
    try:
        scenario = Scenario.from_file(args.scenario) if args.scenario else None
    except (OSError, ScenarioError) as err:
        print(f"{label}: cannot load scenario: {err}", file=sys.stderr)
        return 2
    stop = threading.Event()

    def _on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    with server_class(scenario, port=args.port) as server:
        print(f"{label} listening on {server.url}", flush=True)
        while not stop.wait(0.5):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
