"""History search as the user sees it: the query, its hits, and how full-text and
semantic hits are merged."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from memory.domain.errors import InvalidInput
from memory.domain.history.feature_flags import FlagSource
from memory.domain.relevance import RelevanceFilter

SEARCH_LIMIT_DEFAULT = 20
SEARCH_LIMIT_MAX = 100
MAX_QUERY_CHARS = 1000


class MatchedBy(StrEnum):
    """Which half of a hybrid search found a hit. Equal to its wire value (`"fts"`)."""

    FTS = "fts"
    SEMANTIC = "semantic"


class SemanticState(StrEnum):
    """`on`: semantic hits were searched; `off`: the feature is off for the org (the model
    was not called); `degraded`: the query could not be embedded in time, so the answer is
    full-text only. Equal to its wire value: `result.semantic == "on"`."""

    ON = "on"
    OFF = "off"
    DEGRADED = "degraded"


@dataclass(frozen=True, slots=True)
class HistoryQuery:
    text: str
    limit: int = SEARCH_LIMIT_DEFAULT
    provider: str | None = None
    channel_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    # The least relevance a semantic hit needs (memory.domain.relevance); None: the default
    # rule (DEFAULT_MIN_RELEVANCE, and windows too few to calibrate are kept).
    min_relevance: float | None = None

    def __post_init__(self) -> None:
        self.relevance_filter  # noqa: B018 (a mistyped or out-of-range value is refused here)
        if not self.text.strip():
            raise InvalidInput("q", "must contain a non-blank search text")
        if len(self.text) > MAX_QUERY_CHARS:
            raise InvalidInput("q", f"must be at most {MAX_QUERY_CHARS} characters")
        if not 1 <= self.limit <= SEARCH_LIMIT_MAX:
            raise InvalidInput("limit", f"must be between 1 and {SEARCH_LIMIT_MAX}")
        check_bounds(self.since, self.until)

    @property
    def relevance_filter(self) -> RelevanceFilter:
        return RelevanceFilter.requested(self.min_relevance)


def check_bounds(since: datetime | None, until: datetime | None) -> None:
    """A search's time bounds: each with an offset, `until` after `since`."""
    for name, value in (("since", since), ("until", until)):
        if value is not None and value.tzinfo is None:
            raise InvalidInput(name, "must include a timezone offset")
    if since is not None and until is not None and since >= until:
        raise InvalidInput("until", "must be later than since")


@dataclass(frozen=True, slots=True)
class HistoryHit:
    """One message in the results. Semantic hits carry the id of the window that matched,
    its cosine similarity and its relevance (the similarity in standard deviations above the
    query's mean similarity to the searched windows of the same script group; None when too
    few windows were searched to calibrate it)."""

    event_id: str
    provider: str
    channel_id: str
    sender: str
    text: str
    occurred_at: datetime
    matched_by: MatchedBy
    similarity: float | None = None
    window_id: uuid.UUID | None = None
    relevance: float | None = None


@dataclass(frozen=True, slots=True)
class HybridMerge:
    """Full-text hits first (their order kept), semantic hits appended, each event at most
    once (its first appearance wins), at most `limit` in all."""

    limit: int

    def __post_init__(self) -> None:
        if self.limit < 1:
            raise ValueError("limit must be positive")

    def merge(self, fts: Iterable[HistoryHit], semantic: Iterable[HistoryHit]) -> list[HistoryHit]:
        merged: list[HistoryHit] = []
        seen: set[str] = set()
        for source in (fts, semantic):
            for hit in source:
                if hit.event_id in seen:
                    continue
                seen.add(hit.event_id)
                merged.append(hit)
                if len(merged) == self.limit:
                    return merged
        return merged


@dataclass(frozen=True, slots=True)
class HistorySearchResult:
    """`org_known` is False for an org that never ingested anything; `semantic_off_by` says
    which flag layer turned semantic search off; `pending_windows` (semantic on) how many
    conversation windows still wait for the sweep, so an empty answer explains itself."""

    hits: list[HistoryHit]
    semantic: SemanticState
    model: str | None = None
    org_known: bool = True
    semantic_off_by: FlagSource | None = None
    pending_windows: int | None = None
