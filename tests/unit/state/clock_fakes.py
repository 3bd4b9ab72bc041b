"""A clock moved by hand, whose ``sleep`` moves it (the runtime's ``clock`` and ``sleep``)."""

from __future__ import annotations

from datetime import datetime, timedelta


class Clock:
    def __init__(self, at: datetime) -> None:
        self.now = at
        self.slept: list[float] = []

    def __call__(self) -> datetime:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += timedelta(seconds=seconds)
