from __future__ import annotations

from memory.infrastructure.policy.model_objects import SLUG_MAX_CHARS, ModelObjects

MODELS = [
    "hash:384",
    "local:multilingual-e5-small",
    "ollama:embeddinggemma@384",
    "openai:intfloat/multilingual-e5-small-with-a-very-long-name-indeed@384",
    "ollama:a-b",
    "ollama:a_b",
]


def test_names_fit_postgres_identifiers_and_differ_per_model() -> None:
    assert SLUG_MAX_CHARS == 24
    objects = [ModelObjects(m) for m in MODELS]
    for obj in objects:
        assert len(obj.tracking_table) <= 63
        assert len(obj.hnsw_index) <= 63
        assert obj.tracking_table.endswith("_tracking")
    assert len({o.tracking_table for o in objects}) == len(MODELS)
    assert len({o.hnsw_index for o in objects}) == len(MODELS)
    assert len({o.lease_key for o in objects}) == len(MODELS)


def test_names_are_readable_and_deterministic() -> None:
    assert ModelObjects("hash:384").tracking_table.startswith("policy_projection_hash_384_")
    assert ModelObjects("hash:384") == ModelObjects("hash:384")
    key = ModelObjects("hash:384").lease_key
    assert -(2**63) <= key < 2**63
