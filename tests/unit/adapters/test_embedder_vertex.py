"""The Vertex AI embedder against an in-process fake of the predict endpoint (httpx
MockTransport: no network): the request it sends, batching, normalisation, retries, errors."""

from __future__ import annotations

import json
import math

import httpx
import pytest

from shared_lib.adapters.embedder_vertex import EmbeddingError, EmbeddingUnavailable, VertexEmbedder
from shared_lib.adapters.llm_retry import RetryPolicy
from shared_lib.errors import CharterError

URL = (
    "https://asia-northeast1-aiplatform.googleapis.com/v1/projects/acme-prod/locations/asia-northeast1"
    "/publishers/google/models/text-multilingual-embedding-002:predict"
)


class FakeVertex:
    """Answers predict with a 768-float vector per instance (3 * (i + 1) then zeros, so the
    unit vector is (1, 0, …)) after the scripted failures."""

    def __init__(self, failures: list[httpx.Response] | None = None) -> None:
        self.failures = list(failures or [])
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.failures:
            return self.failures.pop(0)
        instances = json.loads(request.content)["instances"]
        predictions = [
            {"embeddings": {"values": [3.0 * (i + 1)] + [0.0] * 767, "statistics": {"token_count": 3}}}
            for i, _ in enumerate(instances)
        ]
        return httpx.Response(200, json={"predictions": predictions})


def _embedder(fake: FakeVertex, **kwargs: object) -> tuple[VertexEmbedder, list[float]]:
    slept: list[float] = []
    embedder = VertexEmbedder(
        project="acme-prod",
        location="asia-northeast1",
        token=lambda: "tok-1",
        client=httpx.Client(transport=httpx.MockTransport(fake)),
        sleep=slept.append,
        **kwargs,  # type: ignore[arg-type]
    )
    return embedder, slept


def test_it_posts_the_texts_with_the_task_type_and_a_bearer_token() -> None:
    # GIVEN the fake, WHEN two queries are embedded
    fake = FakeVertex()
    embedder, _ = _embedder(fake)
    vectors = embedder.embed(["有給休暇の申請", "経費精算"], kind="query")
    # THEN one request to the model's predict URL, each text a RETRIEVAL_QUERY instance
    (request,) = fake.requests
    assert str(request.url) == URL
    assert request.headers["Authorization"] == "Bearer tok-1"
    assert json.loads(request.content) == {
        "instances": [
            {"content": "有給休暇の申請", "task_type": "RETRIEVAL_QUERY"},
            {"content": "経費精算", "task_type": "RETRIEVAL_QUERY"},
        ]
    }
    # AND the vectors come back unit length, 768 floats, in order
    assert embedder.name == "text-multilingual-embedding-002" and embedder.dimensions == 768
    assert [len(v) for v in vectors] == [768, 768]
    assert all(math.isclose(math.sqrt(sum(x * x for x in v)), 1.0) for v in vectors)
    assert vectors[0][0] == 1.0


def test_documents_go_in_requests_of_at_most_250() -> None:
    fake = FakeVertex()
    embedder, _ = _embedder(fake, base_url="http://127.0.0.1:9/")
    vectors = embedder.embed([f"文書{i}" for i in range(600)], kind="document")
    sizes = [len(json.loads(r.content)["instances"]) for r in fake.requests]
    assert sizes == [250, 250, 100]
    assert len(vectors) == 600
    assert {i["task_type"] for r in fake.requests for i in json.loads(r.content)["instances"]} == {
        "RETRIEVAL_DOCUMENT"
    }
    # the base URL override keeps the API's path
    assert str(fake.requests[0].url).startswith("http://127.0.0.1:9/v1/projects/acme-prod/locations/")


def test_429_and_5xx_are_retried_honouring_retry_after() -> None:
    # GIVEN a 429 asking for 2 seconds, then a 503
    fake = FakeVertex([httpx.Response(429, headers={"retry-after": "2"}), httpx.Response(503)])
    embedder, slept = _embedder(fake, policy=RetryPolicy(max_retries=3, initial_delay=0.5, max_delay=4.0))
    # WHEN embedding, THEN the third attempt answers
    assert len(embedder.embed(["a"], kind="query")) == 1
    assert len(fake.requests) == 3
    assert slept[0] == 2.0 and 0.25 <= slept[1] <= 1.0


def test_unavailable_through_the_retries_is_embedding_unavailable() -> None:
    fake = FakeVertex([httpx.Response(500)] * 3)
    embedder, slept = _embedder(fake, policy=RetryPolicy(max_retries=2))
    with pytest.raises(EmbeddingUnavailable, match="HTTP 500 after 3 attempts"):
        embedder.embed(["a"], kind="query")
    assert len(fake.requests) == 3 and len(slept) == 2


def test_a_connection_failure_is_retried_then_unavailable() -> None:
    calls = []

    def refuse(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        raise httpx.ConnectError("refused", request=request)

    embedder = VertexEmbedder(
        project="p",
        location="asia-northeast1",
        token=lambda: "t",
        client=httpx.Client(transport=httpx.MockTransport(refuse)),
        policy=RetryPolicy(max_retries=1),
        sleep=lambda _: None,
    )
    with pytest.raises(EmbeddingUnavailable):
        embedder.embed(["a"], kind="document")
    assert len(calls) == 2


@pytest.mark.parametrize(
    "answer",
    [
        httpx.Response(403, json={"error": {"message": "denied"}}),
        httpx.Response(400),
        httpx.Response(200, json={"predictions": []}),
        httpx.Response(200, json={"predictions": [{"embeddings": {}}]}),
        httpx.Response(200, json={"predictions": [{"embeddings": {"values": [0.0, 0.0]}}]}),
        httpx.Response(200, text="not json"),
    ],
)
def test_a_refusal_or_a_bad_answer_is_an_embedding_error_at_once(answer: httpx.Response) -> None:
    fake = FakeVertex([answer])
    embedder, slept = _embedder(fake)
    with pytest.raises(EmbeddingError) as caught:
        embedder.embed(["a"], kind="query")
    assert not isinstance(caught.value, EmbeddingUnavailable)
    assert isinstance(caught.value, CharterError)
    assert len(fake.requests) == 1 and slept == []


def test_nothing_to_embed_sends_nothing() -> None:
    fake = FakeVertex()
    embedder, _ = _embedder(fake)
    assert embedder.embed([], kind="query") == []
    assert fake.requests == []


def test_a_project_and_a_location_are_required() -> None:
    with pytest.raises(EmbeddingError):
        VertexEmbedder(project="", location="asia-northeast1", token=lambda: "t")
