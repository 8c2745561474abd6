from __future__ import annotations

from memory.infrastructure.embedding.factory import ModelRegistry, stored_model_id
from memory.infrastructure.settings import Settings


def test_model_specs_resolve_to_the_identity_rows_are_stored_under() -> None:
    assert stored_model_id("ollama:bge-m3:latest") == "ollama:bge-m3"
    assert stored_model_id("ollama:bge-m3@1024") == "ollama:bge-m3"
    assert stored_model_id("ollama:embeddinggemma:latest@384") == "ollama:embeddinggemma@384"
    assert stored_model_id("hash:1024") == "hash:1024"
    assert stored_model_id("local:multilingual-e5-small") == "local:multilingual-e5-small"
    assert stored_model_id(" not a spec ") == "not a spec"


def test_the_stored_identity_is_the_one_the_built_adapter_reports() -> None:
    registry = ModelRegistry(Settings(policy_model="hash:384", history_model="hash:384"))
    try:
        for spec in ("ollama:bge-m3:latest", "openai:text-embedding-3-small@512", "hash:64"):
            assert stored_model_id(spec) == registry.get(spec).identity.id
    finally:
        registry.close()
