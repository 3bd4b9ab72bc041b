"""Kind → adapter: the one place a ``PeerSpec`` becomes an ``LLMPeer``.

``build_peer(spec, settings)`` builds the peer's adapter (``shared_lib.adapters``) with the
settings' timeout and retry policy, the spec's name, limits and model map, its base URL and its
key (``PeerSpec.resolved_base_url`` / ``api_key``):

* ``anthropic`` — ``AnthropicLLM`` (the Anthropic API, a gateway, or the local fake);
* ``vertex`` — ``VertexLLM`` (Claude on Vertex AI: ``region``, ``project`` or the settings'
  project; credentials from Application Default Credentials, or, when the spec names a key
  setting, that value as a static access token: a gateway, the local fake);
* ``openai_compatible`` — ``OpenAICompatibleLLM`` (vLLM, Ollama, LM Studio at ``base_url``),
  built on its first call (``LazyPeer``): its SDK (``openai``, ≈ 660 modules and 22 MiB) is
  imported by a process only once it calls that peer. A deployment's fallback or local peer is
  called by few of its processes; the router decides from the peers' specs, never from an
  adapter, so a peer not yet built is routed like a built one.

Every adapter's ``health()`` is one minimal completion with no retries on the product's fast
model (through the peer's model map), never ``models.list``: an overloaded API still lists them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypedDict

from shared_lib.adapters.llm_retry import RetryPolicy
from shared_lib.adapters.once import BuiltOnce
from shared_lib.peers.config import PeerSpec
from shared_lib.ports import LLMPeer, LLMRequest, LLMResponse, PeerHealth, PeerKind
from shared_lib.settings import Settings

OPENAI_HEALTH_TIMEOUT = 5.0  # seconds: the OpenAI-compatible adapter's own probe timeout (``health_timeout``)


class _Common(TypedDict):
    """What every adapter takes from the spec and the settings."""

    timeout: float
    policy: RetryPolicy
    name: str
    local: bool
    max_context_tokens: int
    supports_parallel: bool
    models: dict[str, str]
    health_model: str


def build_peer(spec: PeerSpec, settings: Settings) -> LLMPeer:
    """The adapter of ``spec``."""
    key, base_url = spec.api_key(settings), spec.resolved_base_url(settings)
    common = _Common(
        timeout=settings.llm_timeout_seconds,
        policy=RetryPolicy.from_settings(settings),
        name=spec.name,
        local=spec.local,
        max_context_tokens=spec.max_context_tokens,
        supports_parallel=spec.supports_parallel,
        models=dict(spec.models),
        health_model=settings.fast_model,
    )
    if spec.kind == "vertex":
        from shared_lib.adapters.vertex_llm import VertexLLM

        region = spec.region or ""  # PeerSpec requires it of a vertex peer
        project = spec.project or settings.project
        return VertexLLM(region=region, project_id=project, access_token=key, base_url=base_url, **common)
    if spec.kind == "openai_compatible":

        def openai_peer() -> LLMPeer:
            from shared_lib.adapters.openai_llm import OpenAICompatibleLLM

            return OpenAICompatibleLLM(
                base_url=base_url, api_key=key, health_timeout=OPENAI_HEALTH_TIMEOUT, **common
            )

        def plain_probe() -> PeerHealth:  # the adapter's probe, before anyone needs the adapter
            from shared_lib.adapters.openai_wire import plain_health

            model = common["models"].get(common["health_model"], common["health_model"])
            return plain_health(base_url or "", key, model, timeout=OPENAI_HEALTH_TIMEOUT)

        return LazyPeer(spec, openai_peer, probe=plain_probe)
    from shared_lib.adapters.anthropic_llm import AnthropicLLM

    return AnthropicLLM(api_key=key or "local-fake", base_url=base_url, **common)


class LazyPeer:
    """A peer whose adapter is built on its first call (``complete``, ``health`` or any attribute
    beyond the spec's): what routing reads (name, kind, local, limits) is the spec's, so holding
    the peer costs nothing until a turn is routed to it. Built once, under a lock.

    >>> from shared_lib.peers.config import PeerSpec
    >>> spec = PeerSpec(name="gpu", kind="openai_compatible", base_url="http://127.0.0.1:9/v1", local=True)
    >>> built = []
    >>> peer = LazyPeer(spec, lambda: built.append(1) or "adapter")
    >>> (peer.name, peer.kind, peer.local, built)
    ('gpu', 'openai_compatible', True, [])
    >>> peer.adapter(), peer.adapter(), built
    ('adapter', 'adapter', [1])
    """

    def __init__(
        self, spec: PeerSpec, build: Callable[[], LLMPeer], *, probe: Callable[[], PeerHealth] | None = None
    ) -> None:
        self.name: str = spec.name
        self.kind: PeerKind = spec.kind
        self.local: bool = spec.local
        self.max_context_tokens: int = spec.max_context_tokens
        self.supports_parallel: bool = spec.supports_parallel
        self._adapter = BuiltOnce(build)
        self._probe = probe

    @property
    def built(self) -> bool:
        return self._adapter.built

    def adapter(self) -> LLMPeer:
        """The peer's adapter, built now if it was not."""
        return self._adapter.get()

    def complete(self, request: LLMRequest) -> LLMResponse:
        return self.adapter().complete(request)

    def health(self) -> PeerHealth:
        """The adapter's probe once it is built; before, ``probe`` when given (the same call
        without building the adapter: the health board probes every peer it holds, a turn may
        never be routed to this one)."""
        if self._probe is not None and not self.built:
            return self._probe()
        return self.adapter().health()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # not yet set (copy, pickle): never build for it
            raise AttributeError(name)
        return getattr(self.adapter(), name)


def usable(spec: PeerSpec, settings: Settings) -> bool:
    """Whether ``spec`` has what it needs to call anyone: an Anthropic peer a key or a base URL (a
    fake, a gateway); a Vertex peer has its region and project, an OpenAI-compatible one its base
    URL (both required by ``PeerSpec``)."""
    if spec.kind == "anthropic":
        return bool(spec.api_key(settings) or spec.resolved_base_url(settings))
    return True
