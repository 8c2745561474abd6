"""History search: full-text always; semantic appended when the org has the feature on and
the query can be embedded in time (otherwise `degraded`, never an error). Semantic hits are
the most relevant windows that reach the query's relevance floor (memory.domain.relevance,
docs/adr/0112): a query nothing answers gets no semantic hit.

With the feature on, the full-text query runs in a worker thread while this thread waits for
the query vector and runs the exact KNN: the answer takes the longer of the two, not the sum.
"""

from __future__ import annotations

import concurrent.futures
import contextvars
from collections.abc import Callable
from datetime import datetime, timedelta
from functools import partial

from memory.application.history.ports import (
    ChatEventLog,
    Clock,
    FeatureFlagStore,
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
        flags: FeatureFlagStore,
        embedder: QueryEmbedder,
        model_id: str,
        full_text_pool: concurrent.futures.Executor,
        clock: Clock,
        similarity_floor: float | None = None,
        max_future_skew: timedelta = DEFAULT_MAX_FUTURE_SKEW,
        pending_windows: Callable[[str], int] = lambda org_id: 0,
    ) -> None:
        self._pending_windows = pending_windows
        self._events = events
        self._windows = windows
        self._flags = flags
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
        org_known = self._events.org_known(org_id)
        layers = self._flags.layers(org_id)
        if not layers.semantic_search:
            fts = self._events.full_text(org_id, query)
            return HistorySearchResult(
                merge.merge(fts, []),
                SemanticState.OFF,
                org_known=org_known,
                semantic_off_by=layers.semantic_off_by(),
            )
        pending = self._embedder.start(query.text)
        full_text = self._full_text_pool.submit(
            contextvars.copy_context().run, self._events.full_text, org_id, query
        )
        vector = pending.result()
        if vector is None:
            fts = full_text.result()
            return HistorySearchResult(
                merge.merge(fts, []), SemanticState.DEGRADED, self._model_id, org_known=org_known
            )
        # Each window contributes several messages, so `limit` windows always suffice.
        matches = self._windows.nearest(org_id, self._model_id, vector, query, k=query.limit)
        if self._similarity_floor is not None:
            floor = self._similarity_floor
            matches = [m for m in matches if m.similarity >= floor]
        kept = query.relevance_filter.keep([m.relevance for m in matches])
        matches = [m for m, keep in zip(matches, kept, strict=True) if keep]
        semantic = self._window_messages(org_id, matches, query)
        fts = full_text.result()
        return HistorySearchResult(
            merge.merge(fts, semantic),
            SemanticState.ON,
            self._model_id,
            org_known=org_known,
            pending_windows=self._pending_windows(org_id) if org_known else 0,
        )

    def _window_messages(
        self, org_id: str, matches: list[WindowMatch], query: HistoryQuery
    ) -> list[HistoryHit]:
        """Each matched window's messages in time order, windows best first."""
        ids = [event_id for match in matches for event_id in match.event_ids]
        if not ids:
            return []
        found = {hit.event_id: hit for hit in self._events.messages(org_id, ids, query)}
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
