"""The Ollama adapter against a fake Ollama speaking real HTTP on loopback."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from memory.application.embedding import InputRejected, ModelMisconfigured, ModelUnavailable
from memory.domain.embedding import EmbeddingVector
from memory.infrastructure.embedding.model_catalog import (
    E5_DOCUMENT_PROMPT,
    E5_QUERY_PROMPT,
    GEMMA_DOCUMENT_PROMPT,
    GEMMA_QUERY_PROMPT,
)
from memory.infrastructure.embedding.model_server import (
    ERROR_MESSAGE_CHARS,
    PROBE_TIMEOUT,
    ModelServer,
    RetryPolicy,
)
from memory.infrastructure.embedding.ollama import OllamaEmbeddingModel
from memory.infrastructure.embedding.remote_model import RemoteModel
from memory.infrastructure.embedding.spec import ModelSpec

MakeModel = Callable[..., OllamaEmbeddingModel]
# conftest's FakeOllama: conftest modules are not importable under --import-mode=importlib.
FakeOllama = Any


@pytest.fixture
def sleeps() -> list[float]:
    """Delays the adapter asked to sleep; recorded instead of slept."""
    return []


@pytest.fixture
def make_model(fake_ollama: FakeOllama, sleeps: list[float]) -> Iterator[MakeModel]:
    made: list[OllamaEmbeddingModel] = []

    def make(
        spec: str = "ollama:embeddinggemma",
        *,
        url: str | None = None,
        retries: int = 3,
        timeout: float = 5.0,
        max_batch: int = 16,
        keep_alive: str | None = None,
    ) -> OllamaEmbeddingModel:
        model = RemoteModel.resolve(ModelSpec.parse(spec))
        server = ModelServer(
            model.identity.id,
            url or fake_ollama.url,
            timeout=timeout,
            policy=RetryPolicy(retries),
            sleep=sleeps.append,
            unit_random=lambda: 0.0,
        )
        adapter = OllamaEmbeddingModel(model, server, max_batch=max_batch, keep_alive=keep_alive)
        made.append(adapter)
        return adapter

    yield make
    for adapter in made:
        adapter.close()


def expected(fake_ollama: FakeOllama, text: str, dims: int | None = None) -> EmbeddingVector:
    full = EmbeddingVector.of(fake_ollama.vector_for(text, fake_ollama.native_dims))
    return full.truncated(dims) if dims else full


def assert_close(a: EmbeddingVector, b: EmbeddingVector) -> None:
    assert a.dimensions == b.dimensions
    assert all(math.isclose(x, y, abs_tol=1e-9) for x, y in zip(a.values, b.values, strict=True))


def test_documents_are_embedded_in_one_request_with_the_document_prompt(
    fake_ollama: FakeOllama, make_model: MakeModel
) -> None:
    model = make_model("ollama:embeddinggemma")
    texts = ["refund policy", "password reset", "holiday calendar"]

    vectors = model.embed_documents(texts)

    [post] = fake_ollama.posts()
    assert post.path == "/api/embed"
    assert post.body == {
        "model": "embeddinggemma",
        "input": [GEMMA_DOCUMENT_PROMPT + t for t in texts],
        "truncate": True,
    }
    assert model.identity.id == "ollama:embeddinggemma"
    for text, vector in zip(texts, vectors, strict=True):
        assert_close(vector, expected(fake_ollama, GEMMA_DOCUMENT_PROMPT + text))


def test_a_query_gets_the_query_prompt(fake_ollama: FakeOllama, make_model: MakeModel) -> None:
    model = make_model("ollama:embeddinggemma", keep_alive="30m")

    vector = model.embed_query("how do I reset my password")

    [post] = fake_ollama.posts()
    assert post.body["input"] == [GEMMA_QUERY_PROMPT + "how do I reset my password"]
    assert post.body["keep_alive"] == "30m"
    assert vector.dimensions == 768
    assert math.isclose(vector.norm(), 1.0)


def test_e5_gets_its_prefixes_and_bge_m3_none(
    fake_ollama: FakeOllama, make_model: MakeModel
) -> None:
    fake_ollama.native_dims = 384
    e5 = make_model("ollama:jeffh/intfloat-multilingual-e5-small:f16")
    e5.embed_query("q")
    e5.embed_documents(["d"])
    fake_ollama.native_dims = 1024
    bge = make_model("ollama:bge-m3")
    bge.embed_query("q")
    bge.embed_documents(["d"])

    inputs = [post.body["input"] for post in fake_ollama.posts()]
    assert inputs == [[E5_QUERY_PROMPT + "q"], [E5_DOCUMENT_PROMPT + "d"], ["q"], ["d"]]


def test_inputs_beyond_the_batch_size_go_in_several_requests_in_order(
    fake_ollama: FakeOllama, make_model: MakeModel
) -> None:
    model = make_model("ollama:bge-m3", max_batch=2)
    fake_ollama.native_dims = 1024
    texts = [f"text {i}" for i in range(5)]

    vectors = model.embed_documents(texts)

    assert [len(post.body["input"]) for post in fake_ollama.posts()] == [2, 2, 1]
    for text, vector in zip(texts, vectors, strict=True):
        assert_close(vector, expected(fake_ollama, text))


def test_no_texts_means_no_request(fake_ollama: FakeOllama, make_model: MakeModel) -> None:
    assert make_model().embed_documents([]) == []
    assert fake_ollama.posts() == []


def test_server_errors_are_retried_with_backoff_until_success(
    fake_ollama: FakeOllama, make_model: MakeModel, sleeps: list[float]
) -> None:
    model = make_model(retries=3)
    fake_ollama.fail(500, {"error": "llama runner process has terminated"}, times=2)

    vector = model.embed_query("hello")

    assert len(fake_ollama.posts()) == 3
    assert sleeps == [0.5, 1.0]  # jitter pinned to zero
    assert vector.dimensions == 768


def test_transient_failures_past_the_retry_budget_are_model_unavailable(
    fake_ollama: FakeOllama, make_model: MakeModel, sleeps: list[float]
) -> None:
    model = make_model(retries=2)
    fake_ollama.fail(503, {"error": "server busy"}, times=3)

    with pytest.raises(ModelUnavailable) as caught:
        model.embed_query("hello")

    assert len(fake_ollama.posts()) == 3
    assert len(sleeps) == 2
    message = str(caught.value)
    assert "ollama:embeddinggemma" in message
    assert f"{fake_ollama.url}/api/embed" in message
    assert "503" in message and "server busy" in message
    assert "transient" in message and "3 attempts" in message


def test_too_many_requests_waits_as_long_as_the_server_asks(
    fake_ollama: FakeOllama, make_model: MakeModel, sleeps: list[float]
) -> None:
    model = make_model(retries=1)
    fake_ollama.fail(429, {"error": "slow down"}, headers={"Retry-After": "3"})

    model.embed_query("hello")

    assert sleeps == [3.0]


def test_a_server_that_hangs_times_out_and_is_retried(
    fake_ollama: FakeOllama, make_model: MakeModel, sleeps: list[float]
) -> None:
    model = make_model(retries=1, timeout=0.2)
    fake_ollama.hold_back(5.0, times=2)

    started = time.monotonic()
    with pytest.raises(ModelUnavailable) as caught:
        model.embed_query("hello")

    assert time.monotonic() - started < 2.0
    assert len(sleeps) == 1
    assert "no answer within 0.2s" in str(caught.value)


def test_a_hang_followed_by_an_answer_succeeds(
    fake_ollama: FakeOllama, make_model: MakeModel
) -> None:
    model = make_model(retries=1, timeout=0.2)
    fake_ollama.hold_back(5.0)

    assert model.embed_query("hello").dimensions == 768


def test_an_unknown_model_is_misconfigured_and_not_retried(
    fake_ollama: FakeOllama, make_model: MakeModel, sleeps: list[float]
) -> None:
    model = make_model(retries=3)
    fake_ollama.fail(404, {"error": 'model "embeddinggemma" not found, try pulling it first'})

    with pytest.raises(ModelMisconfigured) as caught:
        model.embed_documents(["hello"])

    assert len(fake_ollama.posts()) == 1
    assert sleeps == []
    message = str(caught.value)
    assert "404" in message and "not found" in message and "permanent" in message


def test_a_rejected_payload_is_input_rejected_and_not_retried(
    fake_ollama: FakeOllama, make_model: MakeModel, sleeps: list[float]
) -> None:
    model = make_model(retries=3)
    fake_ollama.fail(400, {"error": "input length exceeds the context length"})

    with pytest.raises(InputRejected) as caught:
        model.embed_documents(["hello"])

    assert len(fake_ollama.posts()) == 1
    assert sleeps == []
    assert "400" in str(caught.value) and "context length" in str(caught.value)


def test_fewer_dims_than_configured_is_misconfigured(
    fake_ollama: FakeOllama, make_model: MakeModel
) -> None:
    model = make_model("ollama:bge-m3")
    fake_ollama.answer_dims(768)

    with pytest.raises(ModelMisconfigured, match="returned 768-dim vectors, expected 1024"):
        model.embed_query("hello")


def test_more_dims_from_a_model_not_trained_to_be_shortened_is_misconfigured(
    fake_ollama: FakeOllama, make_model: MakeModel
) -> None:
    model = make_model("ollama:my-custom-embedder@384")
    fake_ollama.answer_dims(768)

    with pytest.raises(ModelMisconfigured, match="not known to be Matryoshka-trained"):
        model.embed_query("hello")
    # An unknown model's @dims declares its size; it is not asked to shrink.
    assert "dimensions" not in fake_ollama.posts()[0].body


def test_embeddinggemma_at_384_is_shortened_client_side_when_the_server_ignores_dimensions(
    fake_ollama: FakeOllama, make_model: MakeModel
) -> None:
    model = make_model("ollama:embeddinggemma@384")

    [vector] = model.embed_documents(["refund policy"])

    [post] = fake_ollama.posts()
    assert post.body["dimensions"] == 384
    assert model.identity.id == "ollama:embeddinggemma@384"
    assert model.identity.dimensions == 384
    assert_close(vector, expected(fake_ollama, GEMMA_DOCUMENT_PROMPT + "refund policy", 384))
    assert math.isclose(vector.norm(), 1.0)


def test_embeddinggemma_at_384_is_taken_as_is_when_the_server_shortens_it(
    fake_ollama: FakeOllama, make_model: MakeModel
) -> None:
    fake_ollama.honours_dimensions = True
    model = make_model("ollama:embeddinggemma@384")

    vector = model.embed_query("refund policy")

    assert_close(vector, expected(fake_ollama, GEMMA_QUERY_PROMPT + "refund policy", 384))


@pytest.mark.parametrize(
    "body",
    [
        {"embeddings": []},
        {"embeddings": [["a", "b"]]},
        {"embeddings": [[0.0] * 768]},
        {"model": "embeddinggemma"},
        ["not", "an", "object"],
    ],
    ids=["too-few", "not-numbers", "zero-vector", "no-embeddings", "not-an-object"],
)
def test_a_malformed_answer_is_misconfigured(
    fake_ollama: FakeOllama, make_model: MakeModel, body: object
) -> None:
    model = make_model()
    fake_ollama.answer_body(body)

    with pytest.raises(ModelMisconfigured):
        model.embed_query("hello")


def test_status_reports_a_pulled_model_as_available(
    fake_ollama: FakeOllama, make_model: MakeModel
) -> None:
    status = make_model("ollama:embeddinggemma@384").status()

    assert status.available
    assert (status.model, status.dimensions) == ("ollama:embeddinggemma@384", 384)


def test_status_tells_a_model_that_is_not_pulled(
    fake_ollama: FakeOllama, make_model: MakeModel
) -> None:
    fake_ollama.native_dims = 1024
    status = make_model("ollama:mxbai-embed-large").status()

    assert not status.available
    assert "has not pulled mxbai-embed-large" in status.detail


def test_status_of_an_unreachable_server_does_not_raise(make_model: MakeModel) -> None:
    status = make_model(url="http://127.0.0.1:9").status()

    assert not status.available
    assert "cannot reach the server" in status.detail


def test_status_of_a_hanging_server_answers_within_the_probe_timeout(
    fake_ollama: FakeOllama, make_model: MakeModel
) -> None:
    fake_ollama.probe_delay = 10.0
    model = make_model(timeout=30.0)

    started = time.monotonic()
    status = model.status()

    assert time.monotonic() - started < PROBE_TIMEOUT + 1.0
    assert not status.available
    assert f"no answer within {PROBE_TIMEOUT:g}s" in status.detail


def test_errors_quote_the_servers_message_but_never_the_input(
    fake_ollama: FakeOllama, make_model: MakeModel
) -> None:
    model = make_model()
    fake_ollama.fail(422, {"detail": [{"msg": "value is not valid", "input": "SECRET TEXT"}]})
    fake_ollama.fail(400, {"error": "x" * 1000})

    with pytest.raises(InputRejected) as first:
        model.embed_documents(["SECRET TEXT"])
    with pytest.raises(InputRejected) as second:
        model.embed_documents(["hello"])

    assert "value is not valid" in str(first.value)
    assert "SECRET" not in str(first.value)
    assert "x" * ERROR_MESSAGE_CHARS in str(second.value)
    assert "x" * (ERROR_MESSAGE_CHARS + 1) not in str(second.value)


def test_a_body_that_is_not_json_is_misconfigured(
    fake_ollama: FakeOllama, make_model: MakeModel
) -> None:
    fake_ollama.answer_body(b"<html>proxy login</html>")

    with pytest.raises(ModelMisconfigured, match="not JSON"):
        make_model().embed_query("hello")


def test_an_unknown_route_is_misconfigured_for_requests_and_probes(fake_ollama: FakeOllama) -> None:
    server = ModelServer("m", fake_ollama.url, timeout=5.0, policy=RetryPolicy(0))
    try:
        with pytest.raises(ModelMisconfigured, match="404"):
            server.post("/no/such/route", {})
        with pytest.raises(ModelMisconfigured, match="404"):
            server.get("/no/such/route")
    finally:
        server.close()


def test_configured_headers_are_sent_with_every_request(fake_ollama: FakeOllama) -> None:
    server = ModelServer(
        "m",
        fake_ollama.url,
        timeout=5.0,
        policy=RetryPolicy(0),
        headers={"Authorization": "Bearer secret-key"},
    )
    try:
        server.post("/api/embed", {"model": "bge-m3", "input": ["a"]})
        server.get("/api/version")
    finally:
        server.close()

    assert [r.headers.get("Authorization") for r in fake_ollama.requests] == [
        "Bearer secret-key",
        "Bearer secret-key",
    ]
