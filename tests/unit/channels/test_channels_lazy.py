"""The providers' reply clients are built on the first use (``channels.lazy.LazyChannels``)
and the channels package imports its clients and webhook readers on first use: a target that
never sends (the guardian, the brain) holds neither."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from shared_lib.channels.clients import HttpChannel
from shared_lib.channels.lazy import LazyChannels
from shared_lib.wiring.composition import build_runtime

REPO = Path(__file__).resolve().parents[3]


def test_the_names_are_known_without_building_and_the_clients_are_built_once_on_first_use():
    built: list[int] = []
    channels = LazyChannels(("chatwork", "http"), lambda: built.append(1) or {"chatwork": "cw", "http": "h"})
    assert "http" in channels and "line" not in channels and sorted(channels) == ["chatwork", "http"]
    assert len(channels) == 2 and built == []
    assert channels["http"] == "h" and channels.get("chatwork") == "cw" and channels.get("line") is None
    assert built == [1]
    with pytest.raises(KeyError):
        channels["line"]


def test_a_runtime_with_the_real_clients_gives_each_provider_a_client():
    rt = build_runtime({"CHARTER_ENV": "test", "CHARTER_CHANNELS": "clients"})
    assert isinstance(rt.channels, LazyChannels)
    assert isinstance(rt.channels["http"], HttpChannel)
    assert sorted(rt.channels) == ["chatwork", "http", "line", "slack"]


def test_a_process_imports_the_clients_only_when_it_sends():
    # GIVEN a fresh process that builds its runtime with the real clients (as a served target)
    code = textwrap.dedent(
        """
        import sys
        from shared_lib.wiring.composition import build_runtime
        rt = build_runtime({"CHARTER_ENV": "test", "CHARTER_CHANNELS": "clients"})
        before = "shared_lib.channels.clients" in sys.modules, "shared_lib.channels.webhooks" in sys.modules
        rt.channels["line"]
        print(before, "shared_lib.channels.clients" in sys.modules)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    # THEN neither the clients nor the webhook readers were imported until a client was asked for
    assert out.stdout.split() == ["(False,", "False)", "True"], out.stderr[-2000:]
