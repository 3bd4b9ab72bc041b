"""``adapters.once.BuiltOnce``: built on the first ``get``, once, whoever asks at the same time."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from shared_lib.adapters.once import BuiltOnce


def test_it_builds_nothing_until_asked_then_once_for_every_caller_at_once():
    started, release, calls = threading.Event(), threading.Event(), []

    def build() -> object:
        calls.append(1)
        started.set()
        assert release.wait(timeout=30)  # the builder holds the others back until released
        return object()

    once = BuiltOnce(build)
    assert not once.built and calls == []
    with ThreadPoolExecutor(max_workers=8) as pool:
        first = pool.submit(once.get)
        assert started.wait(timeout=30)
        others = [pool.submit(once.get) for _ in range(7)]
        release.set()
        values = {id(f.result(timeout=30)) for f in [first, *others]}
    assert len(values) == 1 and calls == [1] and once.built


def test_a_failed_build_is_tried_again_by_the_next_caller():
    attempts = []

    def build() -> str:
        attempts.append(1)
        if len(attempts) == 1:
            raise OSError("the SDK's import failed")
        return "client"

    once = BuiltOnce(build)
    with pytest.raises(OSError):
        once.get()
    assert not once.built and once.get() == "client" and once.built
