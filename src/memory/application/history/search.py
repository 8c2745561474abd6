"""History search: full-text always; semantic appended when the org has the feature on and
the query can be embedded in time (otherwise `degraded`, never an error). Semantic hits are
the most relevant windows that reach the query's relevance floor (memory.domain.relevance,
docs/adr/0112): a query nothing answers gets no semantic hit.

The full-text query starts in a worker thread at once, while this thread reads the search's
state (the org, its flags, the windows still waiting: one statement, docs/adr/0117) and,
with the feature on, waits for the query vector and runs the exact KNN: the answer takes
the longer of the two, not the sum.
"""

from __future__ import annotations

import concurrent.futures
import contextvars
from datetime import datetime, timedelta
from functools import partial

from memory.application.history.ports import (
    ChatEventLog,
    Clock,
    FeatureFlagStore,
    SearchState,
    SearchStateReader,
    SweepSchedule,
    WindowEmbeddings,
    WindowMatch,
)
from memory.application.history.query_embedding import QueryEmbedder
from memory.domain.errors import FieldChecks
from memory.domain.history.search import (
    HistoryHit,
    HistoryQuery,
    HistorySearchResult,
    HybridMerge,
    MatchedBy,
    SemanticState,
    check_bounds,
)
from memory.domain.time_range import DEFAULT_MAX_FUTURE_SKEW, AcceptedTimeRange


class SearchHistory:
    def __init__(
        self,
        *,
        events: ChatEventLog,
        windows: WindowEmbeddings,
        state: SearchStateReader,
        embedder: QueryEmbedder,
        model_id: str,
        full_text_pool: concurrent.futures.Executor,
        clock: Clock,
        similarity_floor: float | None = None,
        max_future_skew: timedelta = DEFAULT_MAX_FUTURE_SKEW,
    ) -> None:
        self._events = events
        self._windows = windows
        self._state = state
        self._embedder = embedder
        self._model_id = model_id
        self._full_text_pool = full_text_pool
        self._similarity_floor = similarity_floor
        self._clock = clock
        self._max_future_skew = max_future_skew

    def check_bounds(self, since: datetime | None, until: datetime | None) -> None:
        """The time bounds' rules: in the accepted range, `until` after `since`;
        `InvalidInput` naming every bound that breaks one. No I/O."""
        accepted = AcceptedTimeRange(self._clock(), self._max_future_skew)
        checks = FieldChecks()
        for name, bound in (("since", since), ("until", until)):
            if bound is not None:
                checks.run(partial(accepted.check, bound, name))
        if not checks.failed:
            checks.run(partial(check_bounds, since, until))
        checks.raise_any()

    def __call__(self, org_id: str, query: HistoryQuery) -> HistorySearchResult:
        self.check_bounds(query.since, query.until)
        merge = HybridMerge(query.limit)
        full_text = self._full_text_pool.submit(
            contextvars.copy_context().run, self._events.full_text, org_id, query
        )
        try:
            state = self._state.search_state(org_id, self._model_id)
        except BaseException:
            full_text.cancel()
            raise
        org_known = state.org_known
        if not state.layers.semantic_search:
            return HistorySearchResult(
                merge.merge(full_text.result(), []),
                SemanticState.OFF,
                org_known=org_known,
                semantic_off_by=state.layers.semantic_off_by(),
            )
        vector = self._embedder.start(query.text).result()
        if vector is None:
            return HistorySearchResult(
                merge.merge(full_text.result(), []),
                SemanticState.DEGRADED,
                self._model_id,
                org_known=org_known,
            )
        # Each window contributes several messages, so `limit` windows always suffice.
        matches = self._windows.nearest(org_id, self._model_id, vector, query, k=query.limit)
        if self._similarity_floor is not None:
            floor = self._similarity_floor
            matches = [m for m in matches if m.similarity >= floor]
        kept = query.relevance_filter.keep([m.relevance for m in matches])
        matches = [m for m, keep in zip(matches, kept, strict=True) if keep]
        semantic = self._window_messages(org_id, matches, query)
        return HistorySearchResult(
            merge.merge(full_text.result(), semantic),
            SemanticState.ON,
            self._model_id,
            org_known=org_known,
            pending_windows=state.pending_windows if org_known else 0,
        )

    def _window_messages(
        self, org_id: str, matches: list[WindowMatch], query: HistoryQuery
    ) -> list[HistoryHit]:
        """Each matched window's messages in time order, windows best first: those the
        window store read with the matches, the others' read now (docs/adr/0155)."""
        found = {hit.event_id: hit for match in matches for hit in match.messages or ()}
        ids = [e for match in matches if match.messages is None for e in match.event_ids]
        if ids:
            found |= {hit.event_id: hit for hit in self._events.messages(org_id, ids, query)}
        hits: list[HistoryHit] = []
        for match in matches:
            in_window = sorted(
                (found[e] for e in match.event_ids if e in found),
                key=lambda h: (h.occurred_at, h.event_id),
            )
            for hit in in_window:
                hits.append(
                    HistoryHit(
                        hit.event_id,
                        hit.provider,
                        hit.channel_id,
                        hit.sender,
                        hit.text,
                        hit.occurred_at,
                        MatchedBy.SEMANTIC,
                        similarity=match.similarity,
                        window_id=match.window_id,
                        relevance=match.relevance,
                    )
                )
        return hits


class SearchStateOneByOne:
    """`SearchStateReader` over the stores that hold each part, read one after the other:
    for stores where a read costs no round trip (in memory)."""

    def __init__(
        self, events: ChatEventLog, flags: FeatureFlagStore, schedule: SweepSchedule
    ) -> None:
        self._events = events
        self._flags = flags
        self._schedule = schedule

    def search_state(self, org_id: str, model: str) -> SearchState:
        return SearchState(
            org_known=self._events.org_known(org_id),
            layers=self._flags.layers(org_id),
            pending_windows=self._schedule.pending_windows(org_id, model),
        )
