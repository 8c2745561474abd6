"""What a client sends to policy memory: request bodies, path and query parameters."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from memory.contract.input import Instant, QueryInt, QueryParams, StrictBody, nullable_ref

# Where a request stands (docs/adr/0102): 'global' or 'org:<org_id>'; omitted, the key's
# home (its org's namespace, or the global one for a key for every org).
Namespace = Annotated[
    str | None,
    Field(description="'global' or 'org:<org_id>'; omitted: the key's org, or global."),
]


class NamespaceQuery(QueryParams):
    namespace: Namespace = None


class PolicyPath(QueryParams):
    policy_id: str


class EmbeddingPath(QueryParams):
    embedding_ref: str


# The domain checks metadata and filters (naming each failing key); the contract documents
# their shapes (`responses.PolicyMetadataShape`, `responses.PolicyFilterShape`).
Metadata = Annotated[
    dict[str, Any] | None,
    Field(json_schema_extra=nullable_ref("PolicyMetadataShape")),
]
Filter = Annotated[
    dict[str, Any] | None,
    Field(json_schema_extra=nullable_ref("PolicyFilterShape")),
]


class StoreBody(StrictBody):
    policy_id: str
    content: str
    metadata: Metadata = None


class UpdateBody(StrictBody):
    content: str
    metadata: Metadata = None


class SearchBody(StrictBody):
    query: str
    similarity_threshold: float | None = None
    # The alternative to the raw threshold: the least relevance (standard deviations above
    # the query's mean similarity, docs/adr/0112).
    min_relevance: float | None = None
    limit: int | None = None
    offset: int | None = None
    cursor: str | None = None
    max_results: int | None = None
    filter: Filter = None


class PolicyListing(QueryParams):
    limit: QueryInt | None = None
    cursor: str | None = None
    source: str | None = None
    tag: str | None = None
    updated_since: Instant | None = None
    namespace: Namespace = None


class EmbeddingLookup(QueryParams):
    origin: Literal["direct", "search"] = "direct"
    query: str | None = None
    namespace: Namespace = None
