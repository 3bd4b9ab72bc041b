"""A configured peer as the brain under test (``charter eval run --peer NAME``).

The peer is built from the settings' peers configuration (``CHARTER_PEERS`` or
``config/peers.json``) by the same factory the composition root uses, and called directly (no
router, no fallback to another peer: the figures are that peer's). ``MeteredPeer`` prices each
call as the peer's own model (``PeerSpec.models`` maps the product's model name to it) from the
price table, so an OpenAI-compatible peer serving ``qwen2.5:32b`` is not costed as Claude.

>>> from shared_lib.peers.config import PeersConfig
>>> config = PeersConfig.parse('{"peers": [{"name": "a", "kind": "anthropic"}]}')
>>> try:
...     peer_spec(config, "nope")
... except ConfigError as exc:
...     print(exc)
unknown peer 'nope' (configured: a)
"""

from __future__ import annotations

import threading
from typing import Any

from shared_lib.errors import ConfigError
from shared_lib.evals.runner import Brain
from shared_lib.peers.config import PeersConfig, PeerSpec, load_peers
from shared_lib.peers.factory import build_peer, usable
from shared_lib.ports import LLMPeer, LLMRequest, LLMResponse
from shared_lib.prices import PriceTable
from shared_lib.settings import Settings


class MeteredPeer:
    """``peer`` answering every call, its cost counted at the peer's model name and price."""

    def __init__(self, peer: LLMPeer, spec: PeerSpec, prices: PriceTable) -> None:
        self.peer, self.spec, self.prices = peer, spec, prices
        self.models: set[str] = set()  # the peer's model names called
        self._cost = 0.0
        self._lock = threading.Lock()

    def served(self, model: str) -> str:
        """The peer's own name of the product's ``model``."""
        return self.spec.models.get(model, model)

    def complete(self, request: LLMRequest) -> LLMResponse:
        response = self.peer.complete(request)
        model = self.served(request.model)
        with self._lock:
            self.models.add(model)
            self._cost += self.prices.cost(model, response.usage)
        return response

    def take_cost(self) -> float:
        with self._lock:
            cost, self._cost = self._cost, 0.0
        return round(cost, 8)

    def __getattr__(self, name: str) -> Any:  # the peer's attributes (name, local, limits)
        return getattr(self.peer, name)


def peer_spec(config: PeersConfig, name: str) -> PeerSpec:
    """The peer called ``name``; ``ConfigError`` naming the configured ones when there is none."""
    for spec in config.peers:
        if spec.name == name:
            return spec
    known = ", ".join(p.name for p in config.peers)
    raise ConfigError(f"unknown peer {name!r} (configured: {known})")


def peer_brain(name: str, settings: Settings, model: str | None = None) -> Brain:
    """The LLM arm over the configured peer ``name`` (``model``: the product's model name to ask
    for, default the settings' model); ``ConfigError`` for an unknown or unusable peer."""
    spec = peer_spec(load_peers(settings.peers), name)
    if not usable(spec, settings):
        raise ConfigError(f"peer {name!r}: no API key and no base URL in the settings")
    prices = PriceTable.load(str(settings.prices_file) if settings.prices_file else None)
    metered = MeteredPeer(build_peer(spec, settings), spec, prices)
    asked = model or settings.model
    return Brain(f"peer:{name}", "llm", metered, asked, peer=name, served_model=metered.served(asked))
