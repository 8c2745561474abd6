"""Embedding references: the stable handle search results give out."""

from __future__ import annotations

from uuid import UUID, uuid5

from memory.domain.errors import InvalidInput

# Deterministic from the aggregate id alone, so a reference is the same after a projection
# rebuild, after an update and after a model swap (see docs/adr/0022).
EMBEDDING_REF_NAME = "policy-embedding"


def embedding_ref_for(aggregate_id: UUID) -> UUID:
    return uuid5(aggregate_id, EMBEDDING_REF_NAME)


def parse_embedding_ref(text: str, *, field: str = "embedding_ref") -> UUID:
    try:
        return UUID(text)
    except ValueError:
        raise InvalidInput(field, "must be a UUID") from None
