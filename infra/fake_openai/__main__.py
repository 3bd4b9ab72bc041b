"""Command line: ``python -m infra.fake_openai --port N [--scenario FILE]``.

Serves the fake OpenAI-compatible API on 127.0.0.1 until SIGTERM or SIGINT, after printing
(and flushing) one line: ``fake-openai listening on http://127.0.0.1:N``.
"""

from __future__ import annotations

import sys

from infra.fake_llm.__main__ import serve
from infra.fake_openai.server import FakeOpenAIServer


def main(argv: list[str] | None = None) -> int:
    return serve(
        argv,
        FakeOpenAIServer,
        "fake-openai",
        "python -m infra.fake_openai",
        "Fake OpenAI-compatible chat completions API on 127.0.0.1.",
    )


if __name__ == "__main__":
    sys.exit(main())
