"""How `SweepWatermark` aggregates are kept: each as one record of its current state, the
eventsourcing library's snapshot of it, replaced when it changes (docs/adr/0148).

A watermark's events are still how it changes (its commands record them, its state is what
they did); what is stored is the state they leave, one record per partition and model, so a
batch of several partitions' advances is one set-based write and a slice's watermarks one
read. `WatermarkCodec` turns a watermark into that record and back with the library's own
mapper and snapshots; `SweepWatermarks` keeps the records in memory (the unit tests' store,
the contract's reference for the PostgreSQL one).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from eventsourcing.domain import Snapshot
from eventsourcing.persistence import (
    DatetimeAsISO,
    DecimalAsStr,
    IntegrityError,
    JSONTranscoder,
    Mapper,
    StoredEvent,
    UUIDAsHex,
)

from memory.domain.history.partition import Partition
from memory.domain.history.watermark import SweepWatermark, new_watermark, watermark_id

# The eventsourcing application whose tables held the watermarks' events before ADR 0148
# (`historysweep_events`, `historysweep_snapshots`): read once, when a database that still
# has them is carried over.
HISTORY_SWEEP_APPLICATION = "HistorySweep"


@dataclass(frozen=True, slots=True)
class WatermarkRecord:
    """A watermark's stored state: `version` is the aggregate's, `expected` the version the
    store must hold for the record to replace it (0: none stored yet)."""

    watermark: SweepWatermark
    expected: int
    stored: StoredEvent


class WatermarkCodec:
    """The library's mapper with the transcodings its applications register (what the
    events and snapshots of `historysweep_*` were written with), and its snapshots."""

    def __init__(self) -> None:
        transcoder = JSONTranscoder()
        transcoder.register(UUIDAsHex())
        transcoder.register(DecimalAsStr())
        transcoder.register(DatetimeAsISO())
        self.mapper: Mapper[uuid.UUID] = Mapper(transcoder=transcoder)

    def pending(self, watermarks: Sequence[SweepWatermark]) -> list[WatermarkRecord]:
        """The records of the watermarks that changed since they were loaded, their pending
        events collected (as the library's `save` does: a refused save loses them too)."""
        records = []
        for w in watermarks:
            events = w.collect_events()
            if not events:
                continue
            records.append(self.record(w, expected=events[0].originator_version - 1))
        return records

    def record(self, watermark: SweepWatermark, *, expected: int) -> WatermarkRecord:
        """The watermark's state as it is now, to replace the record at `expected`."""
        return WatermarkRecord(
            watermark, expected, self.mapper.to_stored_event(Snapshot.take(watermark))
        )

    def decode(self, stored: StoredEvent) -> SweepWatermark:
        snapshot = self.mapper.to_domain_event(stored)
        assert isinstance(snapshot, Snapshot)
        found = snapshot.mutate(None)
        assert isinstance(found, SweepWatermark)
        return found


class SweepWatermarks:
    """The watermarks' records in memory: what `PostgresSweepWatermarks` stores in
    `dw_sweep_watermarks`, with the same refusal of a stale copy."""

    def __init__(self) -> None:
        self._codec = WatermarkCodec()
        self._records: dict[uuid.UUID, StoredEvent] = {}
        self._lock = threading.Lock()

    def find(self, partition: Partition, model: str) -> SweepWatermark | None:
        stored = self._records.get(watermark_id(partition, model))
        return None if stored is None else self._codec.decode(stored)

    def get(self, partition: Partition, model: str) -> SweepWatermark:
        return self.find(partition, model) or new_watermark(partition, model)

    def get_many(
        self, partitions: Sequence[Partition], model: str
    ) -> dict[Partition, SweepWatermark]:
        return {p: self.get(p, model) for p in partitions}

    def store(self, watermark: SweepWatermark) -> None:
        """Replace the watermark's record if it changed (nothing pending: nothing happens);
        `IntegrityError` when the stored one is not the one it was loaded from."""
        self.store_many([watermark])

    def store_many(self, watermarks: Sequence[SweepWatermark]) -> None:
        """`store` for several watermarks, all or none."""
        records = self._codec.pending(watermarks)
        with self._lock:
            for r in records:
                stored = self._records.get(r.watermark.id)
                if (0 if stored is None else stored.originator_version) != r.expected:
                    raise IntegrityError(f"watermark {r.watermark.id} was saved meanwhile")
            for r in records:
                self._records[r.watermark.id] = r.stored

    def close(self) -> None:
        """Nothing to release (the PostgreSQL store's has the same shape)."""
