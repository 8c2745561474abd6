"""Where `SweepWatermark` aggregates live: an eventsourcing application of their own.

Its name gives its tables their prefix (`historysweep_events`), so it never shares tables
with the policy context's application in the same database.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from eventsourcing.application import AggregateNotFoundError, Application

from memory.domain.history.partition import Partition
from memory.domain.history.watermark import SweepWatermark, new_watermark, watermark_id

HISTORY_SWEEP_APPLICATION = "HistorySweep"
# A watermark gains an event per batch it consumes; a snapshot every this many events keeps
# loading it cheap however long the partition lives.
WATERMARK_SNAPSHOT_INTERVAL = 50


class SweepWatermarks(Application[uuid.UUID]):
    """Thin: get, mutate (in the sweep), save. `env` chooses persistence (the library's
    PostgreSQL module in production; its in-memory default when none is given)."""

    name = HISTORY_SWEEP_APPLICATION
    snapshotting_intervals: ClassVar[dict[type[Any], int]] = {
        SweepWatermark: WATERMARK_SNAPSHOT_INTERVAL
    }

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        super().__init__(env=dict(env) if env is not None else None)

    def find(self, partition: Partition, model: str) -> SweepWatermark | None:
        try:
            found: object = self.repository.get(watermark_id(partition, model))
        except AggregateNotFoundError:
            return None
        assert isinstance(found, SweepWatermark)
        return found

    def get(self, partition: Partition, model: str) -> SweepWatermark:
        return self.find(partition, model) or new_watermark(partition, model)

    def get_many(
        self, partitions: Sequence[Partition], model: str
    ) -> dict[Partition, SweepWatermark]:
        """`get` for each partition (one load each here; the PostgreSQL store loads them
        all in two statements, docs/adr/0091)."""
        return {p: self.get(p, model) for p in partitions}

    def store(self, watermark: SweepWatermark) -> None:
        """Save the watermark's pending events atomically (none pending: nothing happens)."""
        self.save(watermark)

    def store_many(self, watermarks: Sequence[SweepWatermark]) -> None:
        """Save several watermarks' pending events in one transaction: the library's `save`
        takes several aggregates and records all their events with one `put`."""
        if watermarks:
            self.save(*watermarks)
