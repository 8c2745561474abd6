"""`hash:<dims>`: deterministic, cheap, and similar for texts that share words."""

from __future__ import annotations

import math

from tests.fakes import cosine_similarity

from memory.infrastructure.embedding.hashing import HASH_MODEL_MAX_TOKENS, HashEmbeddingModel


def test_equal_texts_give_equal_unit_vectors_of_the_configured_size() -> None:
    model = HashEmbeddingModel(384)

    a = model.embed_query("Refunds are paid within 14 days")
    b = HashEmbeddingModel(384).embed_documents(["Refunds are paid within 14 days"])[0]

    assert a == b
    assert a.dimensions == 384
    assert math.isclose(a.norm(), 1.0)
    assert model.identity.id == "hash:384"


def test_texts_sharing_words_are_closer_than_unrelated_texts() -> None:
    model = HashEmbeddingModel(384)
    query = model.embed_query("reset my password")

    related = model.embed_query("how to reset a forgotten password")
    unrelated = model.embed_query("quarterly revenue grew in Asia")

    assert cosine_similarity(query, related) > cosine_similarity(query, unrelated) + 0.3


def test_text_without_words_still_gets_a_vector() -> None:
    model = HashEmbeddingModel(16)

    for text in ("", "!!!", "   "):
        assert math.isclose(model.embed_query(text).norm(), 1.0)


def test_tokens_are_counted_as_words_up_to_the_stated_limit() -> None:
    model = HashEmbeddingModel(8)

    assert model.count_tokens("one two, three!") == 3
    assert model.max_input_tokens == HASH_MODEL_MAX_TOKENS == 512
    assert model.status().available
