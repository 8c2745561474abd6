"""What a client sends to policy memory: request bodies, path and query parameters."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypedDict

from pydantic import Field

from memory.contract.input import (
    NOT_BLANK_NO_NUL,
    Instant,
    QueryInt,
    QueryParams,
    StrictBody,
    nullable_ref,
    stated,
)
from memory.domain.policy.cursor import CURSOR_MAX_CHARS
from memory.domain.policy.pagination import DEFAULT_LIMIT, MAX_LIMIT, MAX_OFFSET
from memory.domain.policy.policy_id import POLICY_ID_MAX_LENGTH, POLICY_ID_PATTERN
from memory.domain.policy.search import QUERY_MAX_CHARS
from memory.domain.relevance import MAX_MIN_RELEVANCE

# The content limit is a setting (MEMORY_POLICY_MAX_CONTENT_CHARS); the schema states its
# default.
DEFAULT_MAX_CONTENT_CHARS = 20_000
_POLICY_ID = stated(pattern=f"^{POLICY_ID_PATTERN.pattern}$", maxLength=POLICY_ID_MAX_LENGTH)
_CONTENT = stated(minLength=1, maxLength=DEFAULT_MAX_CONTENT_CHARS, pattern=NOT_BLANK_NO_NUL)
_QUERY = stated(minLength=1, maxLength=QUERY_MAX_CHARS, pattern=NOT_BLANK_NO_NUL)


# Rules inside the non-null branch of an optional field's schema, where generators and
# readers look for them.
Threshold = Annotated[float, Field(json_schema_extra=stated(minimum=0, maximum=1))]
Relevance = Annotated[float, Field(json_schema_extra=stated(minimum=0, maximum=MAX_MIN_RELEVANCE))]
PageSize = Annotated[
    int, Field(json_schema_extra=stated(minimum=1, maximum=MAX_LIMIT, default=DEFAULT_LIMIT))
]
QueryPageSize = Annotated[
    QueryInt,
    Field(json_schema_extra=stated(minimum=1, maximum=MAX_LIMIT, default=DEFAULT_LIMIT)),
]
Offset = Annotated[int, Field(json_schema_extra=stated(minimum=0, maximum=MAX_OFFSET))]
MaxResults = Annotated[int, Field(json_schema_extra=stated(minimum=1, maximum=MAX_LIMIT))]
Cursor = Annotated[str, Field(json_schema_extra=stated(minLength=1, maxLength=CURSOR_MAX_CHARS))]
NotBlank = Annotated[str, Field(json_schema_extra=stated(pattern=NOT_BLANK_NO_NUL))]
QueryText = Annotated[str, Field(json_schema_extra=_QUERY)]

# Where a request stands (docs/adr/0102): 'global' or 'org:<org_id>'; omitted, the key's
# home (its org's namespace, or the global one for a key for every org).
Namespace = Annotated[
    Annotated[
        str,
        Field(
            json_schema_extra=stated(pattern=r"^(global|org:[A-Za-z0-9][A-Za-z0-9._:-]{0,127})$")
        ),
    ]
    | None,
    Field(description="'global' or 'org:<org_id>'; omitted: the key's org, or global."),
]


class NamespaceQuery(QueryParams):
    namespace: Namespace = None


class PolicyPath(QueryParams):
    policy_id: str = Field(json_schema_extra=_POLICY_ID)


class EmbeddingPath(QueryParams):
    embedding_ref: str = Field(json_schema_extra=stated(format="uuid"))


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
    policy_id: str = Field(json_schema_extra=_POLICY_ID)
    content: str = Field(json_schema_extra=_CONTENT)
    metadata: Metadata = None


class UpdateBody(StrictBody):
    content: str = Field(json_schema_extra=_CONTENT)
    metadata: Metadata = None


class SearchBody(StrictBody):
    query: str = Field(json_schema_extra=_QUERY)
    similarity_threshold: Threshold | None = None
    # The alternative to the raw threshold: the least relevance (standard deviations above
    # the query's mean similarity, docs/adr/0112).
    min_relevance: Relevance | None = None
    limit: PageSize | None = None
    offset: Offset | None = None
    cursor: Cursor | None = Field(
        default=None,
        description="The `next_cursor` of the previous page; not together with `offset`.",
    )
    max_results: MaxResults | None = Field(
        default=None, description="The most results over all pages: 1 to `limit`."
    )
    filter: Filter = None


class SearchOptions(TypedDict, total=False):
    """`SearchBody` without its `query`: what the clients take as keyword arguments and
    pass on whole (`search_policies(query, limit=5, ...)`), so that the search's options
    are named here and in `SearchBody` only."""

    similarity_threshold: float | None
    min_relevance: float | None
    limit: int | None
    offset: int | None
    cursor: str | None
    max_results: int | None
    filter: Mapping[str, Any] | None


class PolicyListing(QueryParams):
    limit: QueryPageSize | None = None
    cursor: Cursor | None = None
    source: NotBlank | None = None
    tag: NotBlank | None = None
    updated_since: Instant | None = None
    namespace: Namespace = None


class EmbeddingLookup(QueryParams):
    origin: Literal["direct", "search"] = "direct"
    query: QueryText | None = None
    namespace: Namespace = None
