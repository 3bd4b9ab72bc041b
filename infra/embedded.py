"""The in-process product the developer commands run on (``charter demo``, ``charter say``).

One place decides the brain the way the demo always has: Claude through the Anthropic API when
``ANTHROPIC_API_KEY`` is set, otherwise the built-in scripted model behind a local fake of the
Anthropic Messages API; replies go to a local fake channel server; the bus is in-process and the
store is a SQLite file the operator commands can read afterwards.

>>> with embedded_product(Path("/tmp/x/demo.sqlite")) as (rt, banner, sent):  # doctest: +SKIP
...     accept(rt, message)
...     sent()  # what the fake channel server received, oldest first
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from shared_lib.runtime import Runtime

Sent = Callable[[], list[dict[str, Any]]]


@contextmanager
def embedded_product(
    db: Path,
    *,
    clock: Callable[[], datetime] | None = None,
    store: dict[str, Any] | None = None,
) -> Iterator[tuple[Runtime, str, Sent]]:
    """A wired in-process runtime over the SQLite store ``db`` (or the ``store`` settings given),
    a line saying which LLM serves it, and what the channels received (the replies as sent: a
    person's own masked values given back, which the turn's record keeps masked)."""
    from infra.fake_channels.server import FakeChannelServer
    from shared_lib.settings import Settings
    from shared_lib.wiring.composition import ENV_FILE, build_runtime, wire_inprocess, write_env_file

    with ExitStack() as stack:
        channels = stack.enter_context(FakeChannelServer())
        values: dict[str, Any] = {
            **channels.env(),
            "env": "demo",
            **(store or {"store": "sqlite", "store_path": db}),
            "bus": "inproc",
            "channels": "clients",
            "llm": "anthropic",
        }
        if Settings.from_env(env="demo").anthropic_api_key is not None:
            banner = "LLM: Claude through the Anthropic API (ANTHROPIC_API_KEY is set)"
        else:
            from infra.fake_llm.server import FakeAnthropicServer

            server = stack.enter_context(FakeAnthropicServer())
            values.update(ANTHROPIC_BASE_URL=server.url, ANTHROPIC_API_KEY="scripted-model")
            banner = (
                "LLM: the built-in scripted model (no ANTHROPIC_API_KEY set) on a local fake Anthropic API"
            )
        overrides: dict[str, Any] = {"clock": clock} if clock is not None else {}
        rt = build_runtime(settings=Settings.from_env(**values), **overrides)
        if store is None:
            write_env_file(
                db.parent / ENV_FILE,
                {"CHARTER_ENV": "demo", "CHARTER_STORE": "sqlite", "CHARTER_STORE_PATH": str(db)},
            )
        wire_inprocess(rt)
        yield rt, banner, lambda: channels.sent(accepted_only=True)
