"""Fixtures of the tool tests (the fakes themselves live in ``tool_fakes``)."""

from __future__ import annotations

import pytest
from tool_fakes import Clock, make_executor, seed


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(memory_store):
    seed(memory_store)
    return memory_store


@pytest.fixture
def ex(store, clock):
    return make_executor(store, clock=clock)
