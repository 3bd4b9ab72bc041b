"""Kind → adapter: the one place a ``PeerSpec`` becomes an ``LLMPeer``.

``build_peer(spec, settings)`` builds the peer's adapter (``shared_lib.adapters``) with the
settings' timeout and retry policy, the spec's name, limits and model map, its base URL and its
key (``PeerSpec.resolved_base_url`` / ``api_key``):

* ``anthropic`` — ``AnthropicLLM`` (the Anthropic API, a gateway, or the local fake);
* ``vertex`` — ``VertexLLM`` (Claude on Vertex AI: ``region``, ``project`` or the settings'
  project; credentials from Application Default Credentials, or, when the spec names a key
  setting, that value as a static access token: a gateway, the local fake);
* ``openai_compatible`` — ``OpenAICompatibleLLM`` (vLLM, Ollama, LM Studio at ``base_url``).

Every adapter's ``health()`` is one minimal completion with no retries on the product's fast
model (through the peer's model map), never ``models.list``: an overloaded API still lists them.
"""

from __future__ import annotations

from typing import TypedDict

from shared_lib.adapters.llm_retry import RetryPolicy
from shared_lib.peers.config import PeerSpec
from shared_lib.ports import LLMPeer
from shared_lib.settings import Settings


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
        from shared_lib.adapters.openai_llm import OpenAICompatibleLLM

        return OpenAICompatibleLLM(base_url=base_url, api_key=key, **common)
    from shared_lib.adapters.anthropic_llm import AnthropicLLM

    return AnthropicLLM(api_key=key or "local-fake", base_url=base_url, **common)


def usable(spec: PeerSpec, settings: Settings) -> bool:
    """Whether ``spec`` has what it needs to call anyone: an Anthropic peer a key or a base URL (a
    fake, a gateway); a Vertex peer has its region and project, an OpenAI-compatible one its base
    URL (both required by ``PeerSpec``)."""
    if spec.kind == "anthropic":
        return bool(spec.api_key(settings) or spec.resolved_base_url(settings))
    return True
