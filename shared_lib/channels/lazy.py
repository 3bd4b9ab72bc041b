"""The providers' reply clients, built on first use (``LazyChannels``): the composition root
gives every target one, and only a target that sends (the responder, a job's report, an alert
to a room) builds, and imports, the clients."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from shared_lib.adapters.once import BuiltOnce
from shared_lib.ports import Channel


class LazyChannels(Mapping[str, Channel]):
    """The providers' reply clients, built on the first reply, job report or alert that needs
    one: a target that never sends (the guardian, the brain) does not import them. The names are
    known before: ``in`` and ``len`` build nothing.

    >>> built = []
    >>> channels = LazyChannels(("http",), lambda: built.append(1) or {"http": "client"})
    >>> "http" in channels, "line" in channels, built
    (True, False, [])
    >>> channels["http"], channels.get("http"), built
    ('client', 'client', [1])
    """

    def __init__(self, names: tuple[str, ...], build: Callable[[], Mapping[str, Channel]]) -> None:
        self._names, self._clients = names, BuiltOnce(build)

    def __getitem__(self, name: str) -> Channel:
        if name not in self._names:
            raise KeyError(name)
        return self._clients.get()[name]

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)
