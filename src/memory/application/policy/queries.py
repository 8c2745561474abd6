"""SearchEmbeddings, GetPolicyByEmbedding and the version history: reads of the projection
(and, for versions, of the event log), each within its time budget."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from memory.application.embedding import EmbeddingModel
from memory.application.policy.deadline import Clock, Deadline
from memory.application.policy.ports import (
    PolicyEventLog,
    PolicyReadModel,
    PolicySimilarityDistribution,
)
from memory.domain.embedding import EmbeddingVector
from memory.domain.errors import FieldChecks, InvalidInput, NotFound
from memory.domain.policy.cursor import CursorCodec, SearchCursor
from memory.domain.policy.dimensionality import FixedDimensionality
from memory.domain.policy.embedding_ref import embedding_ref_for, parse_embedding_ref
from memory.domain.policy.filters import SearchFilter
from memory.domain.policy.listing import ListPosition, ListRequest, StoredPolicy
from memory.domain.policy.namespace import GLOBAL, PolicyAddress, PolicyNamespace
from memory.domain.policy.pagination import PageRequest
from memory.domain.policy.policy_id import PolicyId
from memory.domain.policy.search import (
    PolicyDocument,
    PolicySearch,
    SearchRequest,
    SimilarityResult,
    parse_query_text,
)
from memory.domain.policy.threshold import SimilarityThreshold
from memory.domain.policy.versions import PolicyVersion, version_history
from memory.domain.relevance import QueryDistribution, RelevanceFilter, ScriptGroup
from memory.domain.time_range import DEFAULT_MAX_FUTURE_SKEW, AcceptedTimeRange

ORIGINS = ("direct", "search")


@dataclass(frozen=True)
class SearchAnswer:
    results: list[SimilarityResult]
    next_cursor: str | None
    model: str
    threshold: float
    embed_seconds: float
    database_seconds: float
    min_relevance: float | None = None


NO_THRESHOLD = SimilarityThreshold(0.0)
# A similarity no result reaches: what an explicit `min_relevance` asks of a script group
# too small to calibrate (nothing there is known to be relevant).
UNREACHABLE_SIMILARITY = 2.0


def with_group_floors(request: SearchRequest, distribution: QueryDistribution) -> SearchRequest:
    """The request with its `min_relevance` turned into a least similarity per script
    group for this query (docs/adr/0112)."""
    if request.min_relevance is None:
        return request
    floors = []
    for group in ScriptGroup:
        floor = distribution.similarity_floor(group, request.min_relevance)
        floors.append((group, UNREACHABLE_SIMILARITY if floor is None else floor))
    return replace(request, group_floors=tuple(floors))


def with_relevance(
    result: SimilarityResult, distribution: QueryDistribution | None
) -> SimilarityResult:
    if distribution is None:
        return result
    return replace(result, relevance=distribution.relevance(result.script_group, result.similarity))


@dataclass(frozen=True)
class PolicyPage:
    policies: list[StoredPolicy]
    next_cursor: str | None


class PolicyQueries:
    def __init__(
        self,
        log: PolicyEventLog,
        read_model: PolicyReadModel,
        model: EmbeddingModel,
        cursors: CursorCodec,
        *,
        search_timeout: float,
        default_threshold: float | None = None,
        distribution: PolicySimilarityDistribution | None = None,
        clock: Clock = time.monotonic,
        wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        max_future_skew: timedelta = DEFAULT_MAX_FUTURE_SKEW,
    ) -> None:
        FixedDimensionality.check_model(model.identity)
        if read_model.model_id != model.identity.id:
            raise ValueError("the read model must be read for the active model")
        self._log = log
        self._read_model = read_model
        self._distribution = distribution
        self._model = model
        self._cursors = cursors
        self._search_timeout = search_timeout
        self._default_threshold = SimilarityThreshold.default_for(model.identity, default_threshold)
        self._clock = clock
        self._wall_clock = wall_clock
        self._max_future_skew = max_future_skew

    @property
    def default_threshold(self) -> SimilarityThreshold:
        return self._default_threshold

    def _measure(
        self, vector: EmbeddingVector, request: SearchRequest, budget: Deadline
    ) -> QueryDistribution:
        assert self._distribution is not None
        return self._distribution.distribution(
            vector, request.view, budget.check("before querying the database")
        )

    def deadline(self) -> Deadline:
        """A fresh search budget (`MEMORY_SEARCH_TIMEOUT`)."""
        return Deadline.after(self._search_timeout, clock=self._clock)

    def search(
        self,
        search: PolicySearch,
        *,
        deadline: Deadline | None = None,
        namespace: PolicyNamespace = GLOBAL,
    ) -> SearchAnswer:
        """Searches what `namespace` sees: its own policies and the global ones."""
        budget = deadline or self.deadline()
        request = self.search_request(search, query_required=True)
        assert request is not None
        request = replace(request, view=namespace.visible())
        fingerprint = request.fingerprint(self._model.identity.id)
        after = (
            None
            if request.page.cursor is None
            else self._cursors.decode(request.page.cursor, fingerprint=fingerprint)
        )
        started = self._clock()
        vector = self._embed_query(request.query, budget)
        embedded = self._clock()
        # The distribution is read before the search statement only when `min_relevance`
        # needs its floors; otherwise after it, and only when there is a result to score:
        # the search statement stays the first database call, so a database that is down
        # is reported by it as before (503, not the request's 504 after two pool waits).
        distribution = None
        if self._distribution is not None and request.min_relevance is not None:
            distribution = self._measure(vector, request, budget)
            request = with_group_floors(request, distribution)
        rows = self._read_model.search(
            vector, request, after, budget.check("before querying the database")
        )
        if self._distribution is not None and distribution is None and rows.results:
            distribution = self._measure(vector, request, budget)
        finished = self._clock()
        next_cursor = None
        if rows.has_more and rows.results:
            last = rows.results[-1]
            next_cursor = self._cursors.encode(
                SearchCursor(last.distance, last.embedding_ref, fingerprint)
            )
        return SearchAnswer(
            results=[with_relevance(r, distribution) for r in rows.results],
            next_cursor=next_cursor,
            model=self._model.identity.id,
            threshold=request.threshold.value,
            min_relevance=request.min_relevance,
            embed_seconds=embedded - started,
            database_seconds=finished - embedded,
        )

    def search_request(
        self, search: PolicySearch, *, query_required: bool = False
    ) -> SearchRequest | None:
        """`search`'s rules: the request, or `InvalidInput` naming every broken field; None
        when its `query` was not given (a check of the other fields only) unless
        `query_required`. No I/O."""
        # Every field is checked before any is refused: one 422 names them all.
        checks = FieldChecks()
        query, min_relevance = search.query, search.min_relevance
        text = None if query is None else checks.run(lambda: parse_query_text(query))
        if query is None and query_required:
            checks.fail("query", "is required")
        relevance = checks.run(lambda: RelevanceFilter.requested(min_relevance))
        # `min_relevance` is the alternative to the raw threshold: asked alone, the model's
        # default threshold does not apply on top of it.
        threshold = checks.run(
            lambda: (
                SimilarityThreshold.parse(search.similarity_threshold)
                if search.similarity_threshold is not None
                else NO_THRESHOLD
                if min_relevance is not None
                else self._default_threshold
            )
        )
        page = checks.run(
            lambda: PageRequest.parse(
                limit=search.limit,
                offset=search.offset,
                cursor=search.cursor,
                max_results=search.max_results,
            )
        )
        search_filter = checks.run(
            lambda: SearchFilter.parse(
                search.filter, accepted=AcceptedTimeRange(self._wall_clock(), self._max_future_skew)
            )
        )
        checks.raise_any()
        if text is None:
            return None
        assert threshold is not None and page is not None and search_filter is not None
        assert relevance is not None
        return SearchRequest(
            query=text,
            threshold=threshold,
            page=page,
            filter=search_filter,
            min_relevance=relevance.min_relevance if relevance.explicit else None,
        )

    def get_by_embedding(
        self,
        embedding_ref: str,
        *,
        origin: str = "direct",
        query: str | None = None,
        deadline: Deadline | None = None,
        namespace: PolicyNamespace = GLOBAL,
    ) -> PolicyDocument:
        """The row behind `embedding_ref`, if `namespace` sees it (else `NotFound`, the same
        answer as for a reference that does not exist)."""
        ref = parse_embedding_ref(embedding_ref)
        if origin not in ORIGINS:
            raise InvalidInput("origin", f"must be one of {', '.join(ORIGINS)}, got {origin!r}")
        if origin == "search" and query is None:
            raise InvalidInput("query", "is required when origin=search")
        if origin == "direct" and query is not None:
            raise InvalidInput("query", "is only used with origin=search")
        budget = deadline or self.deadline()
        vector = None
        if query is not None:
            vector = self._embed_query(parse_query_text(query), budget)
        document = self._read_model.get(
            ref, vector, budget.check("before querying the database"), namespace.visible()
        )
        if document is None:
            raise NotFound(
                f"no policy embedding {ref} for model {self._model.identity.id}",
                details={"embedding_ref": str(ref)},
            )
        return document

    def get(self, policy_id: str, *, namespace: PolicyNamespace = GLOBAL) -> StoredPolicy:
        """The current version, from the event log (never behind a lagging projection): the
        namespace's own policy of that id, else the global one (docs/adr/0102)."""
        pid = PolicyId.parse(policy_id)
        found = [self._log.get(PolicyAddress(n, pid)) for n in namespace.visible()]
        live = [a for a in found if a is not None and not a.deleted]
        if not live:
            state = "was deleted" if any(a is not None for a in found) else "does not exist"
            raise NotFound(
                f"policy {pid} {state}",
                details={"policy_id": str(pid), "namespace": namespace.text},
            )
        aggregate = live[0]
        return StoredPolicy(
            policy_id=aggregate.policy_id,
            embedding_ref=embedding_ref_for(aggregate.id),
            version=aggregate.version,
            content=aggregate.content,
            metadata=aggregate.metadata,
            model=aggregate.model,
            stored_at=aggregate.stored_at,
            updated_at=aggregate.modified_on,
            namespace=aggregate.namespace,
        )

    def list_policies(
        self,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        source: str | None = None,
        tag: str | None = None,
        updated_since: datetime | None = None,
        namespace: PolicyNamespace = GLOBAL,
    ) -> PolicyPage:
        """The active model's rows of what `namespace` sees, newest first. A policy its
        model refused to embed is not listed (it is not searchable either); `get` still
        finds it."""
        request = replace(
            self.listing_request(
                limit=limit, cursor=cursor, source=source, tag=tag, updated_since=updated_since
            ),
            view=namespace.visible(),
        )
        fingerprint = request.fingerprint(self._model.identity.id)
        after = (
            None
            if cursor is None
            else ListPosition.from_cursor(self._cursors.decode(cursor, fingerprint=fingerprint))
        )
        rows = self._read_model.list_policies(request, after, self._search_timeout)
        next_cursor = None
        if rows.has_more and rows.policies:
            last = rows.policies[-1]
            next_cursor = self._cursors.encode(
                ListPosition(last.updated_at, last.embedding_ref).to_cursor(fingerprint)
            )
        return PolicyPage(list(rows.policies), next_cursor)

    def listing_request(
        self,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        source: str | None = None,
        tag: str | None = None,
        updated_since: datetime | None = None,
    ) -> ListRequest:
        """`list_policies`' rules: `InvalidInput` naming every broken field. No I/O."""
        return ListRequest.parse(
            limit=limit,
            cursor=cursor,
            source=source,
            tag=tag,
            updated_since=updated_since,
            accepted=AcceptedTimeRange(self._wall_clock(), self._max_future_skew),
        )

    def versions(
        self, policy_id: str, *, namespace: PolicyNamespace = GLOBAL
    ) -> list[PolicyVersion]:
        """Every version of the policy `get` would find: the namespace's own, else the
        global one."""
        pid = PolicyId.parse(policy_id)
        for visible in namespace.visible():
            history = version_history(self._log.events(PolicyAddress(visible, pid)))
            if history:
                return history
        raise NotFound(
            f"policy {pid} does not exist",
            details={"policy_id": str(pid), "namespace": namespace.text},
        )

    def _embed_query(self, text: str, budget: Deadline) -> EmbeddingVector:
        budget.check("before embedding the query")
        vector = self._model.embed_query(text)
        budget.check("embedding the query")
        return FixedDimensionality.check_vector(self._model.identity, vector)
