"""The catalog of known remote models, found however a server spells their names."""

from __future__ import annotations

import pytest

from memory.domain.embedding import base_model_name
from memory.infrastructure.embedding.model_catalog import (
    DEFAULT_MAX_INPUT_TOKENS,
    E5_DOCUMENT_PROMPT,
    E5_QUERY_PROMPT,
    GEMMA_DOCUMENT_PROMPT,
    GEMMA_QUERY_PROMPT,
    KNOWN_FAMILIES,
    find_family,
)


@pytest.mark.parametrize(
    ("name", "family", "dims", "matryoshka", "max_tokens"),
    [
        ("embeddinggemma", "embeddinggemma", 768, True, 2048),
        ("embeddinggemma:300m", "embeddinggemma", 768, True, 2048),
        ("google/embeddinggemma-300m", "embeddinggemma", 768, True, 2048),
        ("bge-m3", "bge-m3", 1024, False, 8192),
        ("BAAI/bge-m3", "bge-m3", 1024, False, 8192),
        ("nomic-embed-text", "nomic-embed-text-v1.5", 768, True, 2048),
        ("nomic-embed-text:v1.5", "nomic-embed-text-v1.5", 768, True, 2048),
        ("nomic-ai/nomic-embed-text-v1.5", "nomic-embed-text-v1.5", 768, True, 2048),
        ("nomic-ai/nomic-embed-text-v1", "nomic-embed-text-v1", 768, False, 2048),
        ("mxbai-embed-large", "mxbai-embed-large", 1024, True, 512),
        ("mixedbread-ai/mxbai-embed-large-v1", "mxbai-embed-large", 1024, True, 512),
        ("all-minilm:l6-v2", "all-minilm", 384, False, 256),
        ("sentence-transformers/all-MiniLM-L6-v2", "all-minilm", 384, False, 256),
        ("multilingual-e5-small", "e5-small", 384, False, 512),
        ("intfloat/multilingual-e5-base", "e5-base", 768, False, 512),
        ("jeffh/intfloat-multilingual-e5-large:f16", "e5-large", 1024, False, 512),
        ("intfloat/e5-small-v2", "e5-small", 384, False, 512),
    ],
)
def test_known_models_are_found_under_every_spelling(
    name: str, family: str, dims: int, matryoshka: bool, max_tokens: int
) -> None:
    found = find_family(name)

    assert found is not None
    assert (found.name, found.native_dimensions, found.matryoshka) == (family, dims, matryoshka)
    assert found.max_input_tokens == max_tokens


@pytest.mark.parametrize(
    "name",
    [
        "qwen3-embedding",
        "intfloat/multilingual-e5-large-instruct",
        "nomic-embed-text-v2-moe",
        "snowflake-arctic-embed",
        "gte5-small",
        "bge-m3-custom",
    ],
)
def test_other_models_are_unknown(name: str) -> None:
    assert find_family(name) is None


def test_prompts_are_the_ones_the_model_cards_prescribe() -> None:
    gemma = find_family("embeddinggemma")
    e5 = find_family("multilingual-e5-small")
    bge = find_family("bge-m3")
    assert gemma is not None and e5 is not None and bge is not None

    assert (GEMMA_QUERY_PROMPT, GEMMA_DOCUMENT_PROMPT) == (
        "task: search result | query: ",
        "title: none | text: ",
    )
    assert (E5_QUERY_PROMPT, E5_DOCUMENT_PROMPT) == ("query: ", "passage: ")
    assert (gemma.query_prompt, gemma.document_prompt) == (
        GEMMA_QUERY_PROMPT,
        GEMMA_DOCUMENT_PROMPT,
    )
    assert (e5.query_prompt, e5.document_prompt) == (E5_QUERY_PROMPT, E5_DOCUMENT_PROMPT)
    assert (bge.query_prompt, bge.document_prompt) == ("", "")


def test_family_names_are_unique_and_the_default_limit_is_e5s() -> None:
    names = [family.name for family in KNOWN_FAMILIES]
    assert len(names) == len(set(names))
    assert DEFAULT_MAX_INPUT_TOKENS == 512


def test_base_name_drops_owner_and_tag() -> None:
    assert base_model_name(" Google/EmbeddingGemma-300m ") == "embeddinggemma-300m"
    assert base_model_name("bge-m3:567m") == "bge-m3"
