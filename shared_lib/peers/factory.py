"""Kind → adapter: the one place a ``PeerSpec`` becomes an ``LLMPeer``.

``build_peer(spec, settings)`` builds the peer's adapter with the settings' timeout and retry
policy, its base URL and its key (``PeerSpec.resolved_base_url`` / ``api_key``). The
``anthropic`` kind is the ``AnthropicLLM`` adapter presented as a peer by ``AnthropicPeer``
(its name and limits from the spec, a health probe of one minimal messages call).
``vertex`` and ``openai_compatible`` are accepted by the configuration but have no adapter in
this build: asking for one is a ``ConfigError`` at start, never a silent fallback.
"""

from __future__ import annotations

import time

from shared_lib.adapters.anthropic_llm import AnthropicLLM, RetryPolicy, describe
from shared_lib.errors import ConfigError
from shared_lib.ids import utc_now
from shared_lib.peers.config import PeerSpec
from shared_lib.ports import LLMPeer, LLMRequest, LLMResponse, PeerHealth, PeerKind
from shared_lib.settings import Settings

HEALTH_TIMEOUT = 5.0
PROBE_MODEL_SETTING = "fast_model"  # the cheapest model the product already names


class AnthropicPeer:
    """``AnthropicLLM`` as an ``LLMPeer``: the spec's name and limits, and ``health()``.

    ``health`` makes ONE minimal messages call (``max_tokens`` 1, no retries, a short timeout),
    not ``models.list``: an overloaded API (529) still lists its models.
    """

    kind: PeerKind = "anthropic"

    def __init__(self, spec: PeerSpec, llm: AnthropicLLM, *, probe_model: str) -> None:
        self.llm = llm
        self.name = spec.name
        self.local = spec.local
        self.max_context_tokens = spec.max_context_tokens
        self.supports_parallel = spec.supports_parallel
        self.probe_model = spec.models.get(probe_model, probe_model)
        self.models = dict(spec.models)

    def complete(self, request: LLMRequest) -> LLMResponse:
        model = self.models.get(request.model)
        return self.llm.complete(request.model_copy(update={"model": model}) if model else request)

    def health(self) -> PeerHealth:
        t0 = time.perf_counter()
        try:
            self.llm.client.with_options(max_retries=0, timeout=HEALTH_TIMEOUT).messages.create(
                model=self.probe_model, max_tokens=1, messages=[{"role": "user", "content": "ping"}]
            )
        except Exception as exc:  # a probe never raises: the failure is its answer
            return PeerHealth(healthy=False, checked_at=utc_now(), latency_ms=_ms(t0), reason=describe(exc))
        return PeerHealth(healthy=True, checked_at=utc_now(), latency_ms=_ms(t0))


def build_peer(spec: PeerSpec, settings: Settings) -> LLMPeer:
    """The adapter of ``spec`` (``ConfigError`` for a kind this build has no adapter for)."""
    if spec.kind == "anthropic":
        key = spec.api_key(settings)
        base_url = spec.resolved_base_url(settings)
        llm = AnthropicLLM(
            api_key=key or "local-fake",
            base_url=base_url,
            timeout=settings.llm_timeout_seconds,
            policy=RetryPolicy.from_settings(settings),
        )
        return AnthropicPeer(spec, llm, probe_model=getattr(settings, PROBE_MODEL_SETTING))
    raise ConfigError(f"peer kind {spec.kind!r} is not available in this build (peer {spec.name!r})")


def usable(spec: PeerSpec, settings: Settings) -> bool:
    """Whether ``spec`` has what it needs to call anyone: a key, or a base URL (a fake, a gateway)."""
    if spec.kind == "anthropic":
        return bool(spec.api_key(settings) or spec.resolved_base_url(settings))
    return True


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 1)
