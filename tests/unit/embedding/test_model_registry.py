"""The registry maps specs to adapters. Building a remote adapter does no I/O."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memory.application.embedding import ModelMisconfigured
from memory.infrastructure.embedding.factory import ModelRegistry
from memory.infrastructure.embedding.hashing import HashEmbeddingModel
from memory.infrastructure.embedding.measured import MeasuredModel
from memory.infrastructure.embedding.ollama import OllamaEmbeddingModel
from memory.infrastructure.embedding.openai_compatible import OpenAICompatibleEmbeddingModel
from memory.infrastructure.embedding.spec import InvalidModelSpec
from memory.infrastructure.settings import Settings


def test_each_provider_gets_its_adapter(make_settings: Callable[..., Settings]) -> None:
    registry = ModelRegistry(make_settings())
    try:
        ollama = registry.get("ollama:embeddinggemma@384")
        openai = registry.get("openai:intfloat/multilingual-e5-small")
        hashed = registry.get("hash:64")

        # Each adapter is wrapped to be measured (ADR 0066).
        assert isinstance(ollama, MeasuredModel)
        assert isinstance(openai, MeasuredModel)
        assert isinstance(hashed, MeasuredModel)
        assert isinstance(ollama.inner, OllamaEmbeddingModel)
        assert ollama.identity.id == "ollama:embeddinggemma@384"
        assert isinstance(openai.inner, OpenAICompatibleEmbeddingModel)
        assert openai.identity.dimensions == 384
        assert isinstance(hashed.inner, HashEmbeddingModel)
        assert registry.get(" ollama:embeddinggemma@384") is ollama
        assert registry.get("hash:64") is hashed  # one adapter per spec
    finally:
        registry.close()


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("ollama:some-model", "dimension is unknown"),
        ("openai:bge-m3@256", "not Matryoshka-trained"),
        ("local:bge-m3", "the only local model"),
        ("local:multilingual-e5-small@256", "the only local model"),
    ],
)
def test_specs_that_cannot_work_fail_at_start(
    make_settings: Callable[..., Settings], spec: str, match: str
) -> None:
    with pytest.raises(InvalidModelSpec, match=match):
        ModelRegistry(make_settings()).get(spec)


def test_a_server_url_that_is_not_http_fails_at_start(
    make_settings: Callable[..., Settings],
) -> None:
    registry = ModelRegistry(make_settings(ollama_url="127.0.0.1:11434"))

    with pytest.raises(ModelMisconfigured, match="not an http"):
        registry.get("ollama:bge-m3")


def test_the_batch_size_setting_defaults_to_16() -> None:
    assert Settings.model_fields["model_max_batch"].default == 16
