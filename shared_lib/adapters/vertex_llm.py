"""Claude on Vertex AI as an ``LLMPeer``: the Anthropic adapter over the SDK's Vertex client.

Same retry policy, streaming salvage, span and health probe as ``AnthropicLLM`` (this is that
adapter with ``anthropic.AnthropicVertex`` passed in); only the client and the names differ.
Keyword-only arguments:

* ``region`` and ``project_id`` (required); ``access_token`` (else the credentials from
  Application Default Credentials, or ``credentials``); ``base_url`` (optional: the fake
  server's ``http://127.0.0.1:N/v1`` in tests and the local stack);
* ``models``: the product's model name → the Vertex model id (e.g. ``claude-sonnet-4-6`` →
  ``claude-sonnet-4-6@20260101``); a name not in the map passes through;
* everything else as ``AnthropicLLM``: ``timeout``, ``policy``, ``sleep``, ``name``
  (``"vertex"``), ``local`` (``False``), ``max_context_tokens``, ``supports_parallel``,
  ``health_model``, ``health_timeout``.

The SDK sends ``POST {base_url}/projects/{project}/locations/{region}/publishers/anthropic/
models/{model}:rawPredict`` (``:streamRawPredict`` when streaming) with the model in the path,
``anthropic_version`` in the body and a Bearer token.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import anthropic

from shared_lib.adapters.anthropic_llm import AnthropicLLM
from shared_lib.adapters.llm_retry import RetryPolicy
from shared_lib.ports import PeerKind

if TYPE_CHECKING:
    from google.auth.credentials import Credentials


class VertexLLM(AnthropicLLM):
    kind: PeerKind = "vertex"
    provider = "gcp.vertex_ai"

    def __init__(
        self,
        *,
        region: str,
        project_id: str,
        access_token: str | None = None,
        credentials: Credentials | None = None,
        base_url: str | None = None,
        timeout: float = 30.0,
        policy: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        name: str = "vertex",
        local: bool = False,
        max_context_tokens: int = 200_000,
        supports_parallel: bool = True,
        models: Mapping[str, str] | None = None,
        health_model: str = "claude-haiku-4-5",
        health_timeout: float = 5.0,
    ) -> None:
        client = anthropic.AnthropicVertex(
            region=region,
            project_id=project_id,
            access_token=access_token,
            credentials=credentials,
            base_url=base_url,
            timeout=timeout,
            max_retries=0,
        )
        super().__init__(
            client=client,
            timeout=timeout,
            policy=policy,
            sleep=sleep,
            name=name,
            local=local,
            max_context_tokens=max_context_tokens,
            supports_parallel=supports_parallel,
            models=models,
            health_model=health_model,
            health_timeout=health_timeout,
        )
