"""Fixtures of the observability/operations tests (the fakes live in ``ops_fakes``)."""

from __future__ import annotations

import pytest
from ops_fakes import Clock, ScriptedLLM, make_runtime, send

from shared_lib.demo_data import CONVERSATION
from shared_lib.runtime import Runtime
from shared_lib.telemetry.notify import RecordingNotifier


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def scripted_llm() -> ScriptedLLM:
    return ScriptedLLM()


@pytest.fixture
def notifier() -> RecordingNotifier:
    return RecordingNotifier()


@pytest.fixture
def rt(scripted_llm: ScriptedLLM, clock: Clock, notifier: RecordingNotifier) -> Runtime:
    """The in-process chain with the LLM arm (scripted model) and a recording notifier."""
    return make_runtime(llm=scripted_llm, clock=clock, notifiers=[notifier])


@pytest.fixture
def demo_turns(rt: Runtime) -> list[str]:
    """The demo conversation through the chain; the turn ids in order."""
    return [send(rt, text, user=speaker) for speaker, text in CONVERSATION]
