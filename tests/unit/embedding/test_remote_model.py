"""Resolving a remote spec against the catalog, and checking what servers return."""

from __future__ import annotations

import math

import pytest

from memory.application.embedding import ModelMisconfigured
from memory.infrastructure.embedding.remote_model import RemoteModel
from memory.infrastructure.embedding.spec import InvalidModelSpec, ModelSpec
from memory.infrastructure.embedding.token_estimate import estimate_tokens


def resolve(text: str) -> RemoteModel:
    return RemoteModel.resolve(ModelSpec.parse(text))


@pytest.mark.parametrize(
    ("spec", "identity", "dims", "requested"),
    [
        ("ollama:bge-m3", "ollama:bge-m3", 1024, None),
        ("ollama:bge-m3@1024", "ollama:bge-m3", 1024, None),
        ("ollama:bge-m3:latest", "ollama:bge-m3", 1024, None),
        ("ollama:embeddinggemma@384", "ollama:embeddinggemma@384", 384, 384),
        ("ollama:embeddinggemma:latest@768", "ollama:embeddinggemma", 768, None),
        (
            "openai:intfloat/multilingual-e5-small",
            "openai:intfloat/multilingual-e5-small",
            384,
            None,
        ),
        ("openai:my-embedder@1536", "openai:my-embedder@1536", 1536, None),
        ("openai:bge-m3:latest", "openai:bge-m3:latest", 1024, None),
    ],
)
def test_identity_is_the_canonical_spec(
    spec: str, identity: str, dims: int, requested: int | None
) -> None:
    model = resolve(spec)

    assert (model.identity.id, model.identity.dimensions) == (identity, dims)
    assert model.requested_dimensions == requested


def test_an_unknown_model_needs_its_dimension() -> None:
    with pytest.raises(InvalidModelSpec, match=r"give it as ollama:my-embedder@<dims>"):
        resolve("ollama:my-embedder")


def test_a_known_model_cannot_grow() -> None:
    with pytest.raises(InvalidModelSpec, match="makes 1024-dim vectors, not 2048"):
        resolve("ollama:bge-m3@2048")


def test_only_matryoshka_models_can_be_shortened() -> None:
    with pytest.raises(InvalidModelSpec, match="not Matryoshka-trained"):
        resolve("ollama:bge-m3@512")
    assert resolve("ollama:nomic-embed-text@256").requested_dimensions == 256


def test_prompts_limits_and_token_counts_follow_the_family() -> None:
    gemma, unknown = resolve("ollama:embeddinggemma@384"), resolve("openai:x@8")

    assert gemma.max_input_tokens == 2048
    assert unknown.max_input_tokens == 512
    assert (unknown.query_prompt, unknown.document_prompt) == ("", "")
    assert gemma.count_tokens("hello") == estimate_tokens("title: none | text: hello")


def test_fit_normalises_a_vector_of_the_right_size() -> None:
    vector = resolve("openai:x@2").fit([3.0, 4.0])

    assert vector.values == (0.6, 0.8)


def test_fit_shortens_a_longer_matryoshka_vector_and_renormalises() -> None:
    model = resolve("ollama:embeddinggemma@384")

    vector = model.fit([1.0] * 384 + [5.0] * 384)

    assert vector.dimensions == 384
    assert math.isclose(vector.norm(), 1.0)
    assert math.isclose(vector.values[0], 1 / math.sqrt(384))


@pytest.mark.parametrize(
    ("spec", "values", "match"),
    [
        ("openai:x@4", [1.0] * 8, "not known to be Matryoshka-trained"),
        ("ollama:bge-m3", [1.0] * 1025, "not known to be Matryoshka-trained"),
        ("ollama:embeddinggemma@384", [1.0] * 256, "returned 256-dim vectors, expected 384"),
        ("openai:x@2", [0.0, 0.0], "malformed"),
        ("openai:x@2", ["a", "b"], "malformed"),
        ("openai:x@2", [1.0, None], "malformed"),
        ("openai:x@2", "12", "malformed"),
        ("openai:x@2", {"a": 1.0, "b": 2.0}, "malformed"),
        ("openai:x@2", [], "malformed"),
    ],
)
def test_fit_refuses_anything_else(spec: str, values: object, match: str) -> None:
    with pytest.raises(ModelMisconfigured, match=match):
        resolve(spec).fit(values)
