"""A semantic search as the domain sees it: the request, its identity and its results."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from memory.domain.errors import InvalidInput
from memory.domain.policy.filters import SearchFilter
from memory.domain.policy.metadata import PolicyMetadata
from memory.domain.policy.namespace import GLOBAL, PolicyNamespace
from memory.domain.policy.pagination import PageRequest
from memory.domain.policy.threshold import SimilarityThreshold
from memory.domain.relevance import ScriptGroup

QUERY_MAX_CHARS = 4_096


def parse_query_text(text: str, *, field: str = "query") -> str:
    if not text.strip():
        raise InvalidInput(field, "must not be empty or blank")
    if len(text) > QUERY_MAX_CHARS:
        raise InvalidInput(field, f"must be at most {QUERY_MAX_CHARS} characters, got {len(text)}")
    if "\x00" in text:
        raise InvalidInput(field, "must not contain NUL characters")
    return text


@dataclass(frozen=True, slots=True)
class PolicySearch:
    """A policy search as a caller asks it (the route from its body, a client, an
    in-process caller), passed whole from the door to the use case, which checks its rules
    and turns it into a `SearchRequest`. None means "not given" (the defaults apply; a
    `query` not given is refused by a search and skipped by a check of the other fields).
    `min_relevance` is the alternative to the raw `similarity_threshold` (docs/adr/0112);
    `offset` and `cursor` page (not both); `max_results` caps every page together."""

    query: str | None = None
    similarity_threshold: float | None = None
    min_relevance: float | None = None
    limit: int | None = None
    offset: int | None = None
    cursor: str | None = None
    max_results: int | None = None
    filter: Any = None


@dataclass(frozen=True)
class SearchRequest:
    query: str
    threshold: SimilarityThreshold
    page: PageRequest
    filter: SearchFilter
    # The namespaces searched (docs/adr/0102): the global one alone, or an org's and the
    # global one.
    view: tuple[PolicyNamespace, ...] = (GLOBAL,)
    # The least relevance a result needs (memory.domain.relevance); None: the raw
    # threshold alone decides.
    min_relevance: float | None = None
    # What `min_relevance` means for this query: the least similarity per script group,
    # from the query's similarity distribution (set by the use case once it has the vector).
    group_floors: tuple[tuple[ScriptGroup, float], ...] = ()

    def fingerprint(self, model_id: str) -> str:
        """What makes two requests the same search (pages of one result list). The global
        view adds nothing, so cursors issued before namespaces existed stay valid."""
        parts: list[object] = [model_id, self.query, self.threshold.value, self.filter.canonical()]
        if self.view != (GLOBAL,):
            parts.append([n.text for n in self.view])
        if self.min_relevance is not None:
            parts.append({"min_relevance": self.min_relevance})
        identity = json.dumps(parts, ensure_ascii=False)
        return hashlib.sha256(identity.encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True)
class SimilarityResult:
    embedding_ref: UUID
    policy_id: str
    version: int
    similarity: float
    distance: float
    metadata: PolicyMetadata
    timestamp: datetime
    namespace: PolicyNamespace = GLOBAL
    script_group: ScriptGroup = ScriptGroup.OTHER
    # Standard deviations above the query's mean similarity within the script group
    # (memory.domain.relevance); None when too few policies to calibrate.
    relevance: float | None = None


@dataclass(frozen=True)
class PolicyDocument:
    """A policy as GetPolicyByEmbedding returns it; `similarity` only for origin=search."""

    embedding_ref: UUID
    policy_id: str
    version: int
    content: str
    metadata: PolicyMetadata
    timestamp: datetime
    similarity: float | None = None
    namespace: PolicyNamespace = GLOBAL
