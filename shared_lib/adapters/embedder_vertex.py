"""Vertex AI text embeddings as an ``Embedder`` (the cloud's; seed 001 §18.3).

``POST {base_url}/v1/projects/{project}/locations/{location}/publishers/google/models/{model}:predict``
with ``{"instances": [{"content": text, "task_type": "RETRIEVAL_QUERY" | "RETRIEVAL_DOCUMENT"}]}``,
at most 250 instances a request, a Bearer token from Application Default Credentials
(``google.auth.default``; tests pass ``token``). The base URL defaults to
``https://{location}-aiplatform.googleapis.com``; tests point it at a fake.

A 429, a 5xx, a 408 or a connection failure is retried with the LLM peers' backoff
(``RetryPolicy.backoff``, honouring ``retry-after``); when the retries are spent,
``EmbeddingUnavailable``. Any other answer (a 400, a 403, a body without the vectors) is
``EmbeddingError`` at once. Vectors come back L2-normalised.

Errors::

    CharterError
    └── EmbeddingError          the request or the answer is wrong (not retried)
        └── EmbeddingUnavailable  the service stayed unavailable through the retries
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import httpx

from shared_lib.adapters.llm_retry import RetryPolicy, header_retry_after
from shared_lib.errors import CharterError
from shared_lib.ports import EmbedKind, Vector

MAX_INSTANCES = 250  # Vertex AI's limit of texts per predict request
DIMENSIONS = {"text-multilingual-embedding-002": 768, "text-embedding-005": 768, "text-embedding-004": 768}
_TASK = {"query": "RETRIEVAL_QUERY", "document": "RETRIEVAL_DOCUMENT"}
_SCOPE = "https://www.googleapis.com/auth/cloud-platform"


class EmbeddingError(CharterError):
    """Vertex AI refused the request or answered without the vectors."""


class EmbeddingUnavailable(EmbeddingError):
    """Vertex AI stayed unavailable (429, 5xx, no connection) through the retries."""


def _retryable(status: int) -> bool:
    return status in (408, 429) or status >= 500


def adc_token() -> Callable[[], str]:
    """A token source over Application Default Credentials, refreshed when it expires."""
    import google.auth
    from google.auth.transport.requests import Request

    credentials, _ = google.auth.default(scopes=[_SCOPE])
    lock = threading.Lock()

    def token() -> str:
        with lock:
            if not credentials.valid:
                credentials.refresh(Request())  # type: ignore[no-untyped-call]
            return str(credentials.token)

    return token


def _unit(values: Any) -> Vector:
    if not isinstance(values, list) or not values or not all(isinstance(x, int | float) for x in values):
        raise EmbeddingError("Vertex AI answered a prediction without embedding values")
    norm = math.sqrt(sum(x * x for x in values))
    if not norm:
        raise EmbeddingError("Vertex AI answered a zero vector")
    return Vector(float(x) / norm for x in values)


class VertexEmbedder:
    """``Embedder`` over Vertex AI's text embedding models (768 dimensions)."""

    def __init__(
        self,
        *,
        project: str,
        location: str,
        model: str = "text-multilingual-embedding-002",
        base_url: str | None = None,
        token: Callable[[], str] | None = None,
        client: httpx.Client | None = None,
        policy: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        timeout: float = 30.0,
    ) -> None:
        if not project or not location:
            raise EmbeddingError("Vertex AI embeddings need a project and a location")
        self.name = model
        self.dimensions = DIMENSIONS.get(model, 768)
        root = (base_url or f"https://{location}-aiplatform.googleapis.com").rstrip("/")
        self.url = (
            f"{root}/v1/projects/{project}/locations/{location}/publishers/google/models/{model}:predict"
        )
        self._token = token
        self._token_lock = threading.Lock()
        self._client = client or httpx.Client(timeout=timeout)
        self._policy = policy or RetryPolicy()
        self._sleep = sleep

    def _bearer(self) -> str:
        if self._token is None:
            with self._token_lock:  # ADC is looked up on the first call, not at construction
                if self._token is None:
                    self._token = adc_token()
        return self._token()

    def embed(self, texts: Sequence[str], *, kind: EmbedKind) -> list[Vector]:
        """One unit vector per text, in order; requests of at most 250 texts."""
        out: list[Vector] = []
        for start in range(0, len(texts), MAX_INSTANCES):
            batch = texts[start : start + MAX_INSTANCES]
            body = {"instances": [{"content": text, "task_type": _TASK[kind]} for text in batch]}
            predictions = self._post(body).get("predictions")
            if not isinstance(predictions, list) or len(predictions) != len(batch):
                raise EmbeddingError(
                    f"Vertex AI answered {len(predictions or [])} predictions for {len(batch)} texts"
                )
            for prediction in predictions:
                embeddings = prediction.get("embeddings") if isinstance(prediction, dict) else None
                out.append(_unit(embeddings.get("values") if isinstance(embeddings, dict) else None))
        return out

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        retries = self._policy.max_retries
        for attempt in range(retries + 1):
            try:
                response = self._client.post(
                    self.url, json=body, headers={"Authorization": f"Bearer {self._bearer()}"}
                )
            except httpx.TransportError as exc:
                if attempt == retries:
                    raise EmbeddingUnavailable(f"Vertex AI embeddings: {type(exc).__name__}") from exc
                self._sleep(self._policy.backoff(attempt + 1))
                continue
            if response.status_code == 200:
                try:
                    answer = response.json()
                except ValueError as exc:
                    raise EmbeddingError("Vertex AI answered a body that is not JSON") from exc
                if not isinstance(answer, dict):
                    raise EmbeddingError("Vertex AI answered a body that is not an object")
                return answer
            if not _retryable(response.status_code):
                raise EmbeddingError(f"Vertex AI embeddings answered HTTP {response.status_code}")
            if attempt == retries:
                raise EmbeddingUnavailable(
                    f"Vertex AI embeddings answered HTTP {response.status_code} after {retries + 1} attempts"
                )
            wait = header_retry_after(response.headers)
            self._sleep(
                min(wait, self._policy.max_retry_after)
                if wait is not None
                else self._policy.backoff(attempt + 1)
            )
        raise AssertionError("unreachable: the last attempt returns or raises")
