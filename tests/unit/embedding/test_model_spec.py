"""Model specs: `provider:name[@dims]`, parsed strictly."""

from __future__ import annotations

import pytest

from memory.infrastructure.embedding.spec import InvalidModelSpec, ModelSpec


@pytest.mark.parametrize(
    ("text", "provider", "name", "dims"),
    [
        ("local:multilingual-e5-small", "local", "multilingual-e5-small", None),
        ("ollama:embeddinggemma@384", "ollama", "embeddinggemma", 384),
        ("ollama:bge-m3:567m", "ollama", "bge-m3:567m", None),
        (
            "openai:intfloat/multilingual-e5-small@384",
            "openai",
            "intfloat/multilingual-e5-small",
            384,
        ),
        ("  hash:64 ", "hash", "64", 64),
    ],
)
def test_valid_specs_parse(text: str, provider: str, name: str, dims: int | None) -> None:
    assert ModelSpec.parse(text) == ModelSpec(provider, name, dims)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "bge-m3",
        "ollama:",
        "ollama:bge m3",
        "ollama:bge-m3@",
        "ollama:bge-m3@0",
        "ollama:bge-m3@-5",
        "ollama:bge-m3@1.5",
        "cohere:embed-v3",
        "Ollama:bge-m3",
        "hash:0",
        "hash:abc",
        "hash:64@64",
    ],
)
def test_invalid_specs_are_rejected_with_the_form_they_should_have(text: str) -> None:
    with pytest.raises(InvalidModelSpec, match=r"provider|dims|dimensions|hash"):
        ModelSpec.parse(text)


@pytest.mark.parametrize(
    "text",
    ["local:multilingual-e5-small", "ollama:embeddinggemma@384", "hash:1024", "openai:a/b@8"],
)
def test_a_spec_prints_as_it_parses(text: str) -> None:
    assert str(ModelSpec.parse(text)) == text
