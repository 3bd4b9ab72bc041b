"""Fixtures of the rollout tests (the fakes themselves live in ``rollout_fakes``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from rollout_fakes import ScriptedLLM, Ticker, WallClock


@pytest.fixture
def scripted_llm() -> Iterator[ScriptedLLM]:
    llm = ScriptedLLM()
    yield llm
    if llm.gate is not None:
        llm.gate.set()


@pytest.fixture
def ticker() -> Ticker:
    return Ticker()


@pytest.fixture
def wall_clock() -> WallClock:
    return WallClock()
