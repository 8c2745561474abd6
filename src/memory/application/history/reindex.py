"""Re-indexing chat events for full-text search after the segmentation changed (rows written
before migration 0205 hold PostgreSQL's one-word-per-CJK-run index; docs/adr/0051)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Protocol

from memory.application.history.ports import FullTextIndex, RowKey

# Rows per transaction: large enough that a round trip is a small share of a batch, small
# enough that a batch holds its row locks only briefly next to live ingest.
REINDEX_BATCH_ROWS = 1000


class ReindexObserver(Protocol):
    """Progress of a re-index, e.g. for a progress bar."""

    def started(self, stale_rows: int) -> None: ...

    def batch_done(self, rows: int) -> None: ...


@dataclass(frozen=True, slots=True)
class ReindexReport:
    rows_reindexed: int
    rows_left: int


class ReindexFullText:
    """Walks the table once in key order, re-indexing stale rows batch by batch, each batch
    committed on its own: stopping at any point loses nothing, and running again resumes
    (finished rows are no longer stale). Rows ingested meanwhile are indexed by ingest."""

    def __init__(self, index: FullTextIndex, batch_rows: int = REINDEX_BATCH_ROWS) -> None:
        if batch_rows < 1:
            raise ValueError("batch_rows must be positive")
        self._index = index
        self._batch_rows = batch_rows

    def stale(self, org_id: str | None = None) -> int:
        return self._index.count_stale(org_id)

    def __call__(
        self, observer: ReindexObserver | None = None, stop: threading.Event | None = None
    ) -> ReindexReport:
        if observer is not None:
            observer.started(self._index.count_stale())
        done = 0
        after: RowKey | None = None
        while stop is None or not stop.is_set():
            batch = self._index.reindex_batch(after, self._batch_rows)
            done += batch.rows
            if observer is not None and batch.rows:
                observer.batch_done(batch.rows)
            if batch.next_after is None:
                break
            after = batch.next_after
        return ReindexReport(done, self._index.count_stale())
