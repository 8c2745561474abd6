"""The PostgreSQL watermark store's batched load (docs/adr/0091) loads what the library's
repository loads one by one: snapshots, the events after them, absent watermarks as new."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from memory.application.history.watermarks import WATERMARK_SNAPSHOT_INTERVAL
from memory.domain.history.partition import Partition
from memory.domain.history.position import SweepPosition
from memory.domain.history.sweep_plan import WatermarkMark
from memory.infrastructure.history.watermark_store import open_sweep_watermarks

T = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def test_a_batched_load_equals_loading_each_watermark(database) -> None:
    store = open_sweep_watermarks(database)
    try:
        long, short, fresh = (Partition("acme", "slack", c) for c in ("LONG", "SHORT", "NONE"))
        w = store.get(long, "m")
        w.skip_poison_window(uuid.uuid4(), SweepPosition(T, "e0"), SweepPosition(T, "e0"), 1, "x")
        # Two snapshots and a few events after the last.
        for i in range(1, 2 * WATERMARK_SNAPSHOT_INTERVAL + 5):
            w.advance(WatermarkMark(SweepPosition(T, f"e{i:04d}"), i), embedded=[], skipped=1)
            store.store(w)
        s = store.get(short, "m")
        s.advance(WatermarkMark(SweepPosition(T, "x1"), 3), embedded=[uuid.uuid4()], skipped=0)
        s.stall("model_unavailable")
        store.store(s)
        other_model = store.get(short, "other")
        other_model.advance(WatermarkMark(SweepPosition(T, "y"), 9), embedded=[], skipped=2)
        store.store(other_model)

        loaded = store.get_many([long, short, fresh], "m")
        for partition in (long, short, fresh):
            one = store.get(partition, "m")
            many = loaded[partition]
            assert (many.id, many.version, many.mark) == (one.id, one.version, one.mark)
            assert (many.windows_embedded, many.windows_skipped, many.is_stalled) == (
                one.windows_embedded,
                one.windows_skipped,
                one.is_stalled,
            )
            assert many.poison_windows == one.poison_windows
        assert loaded[fresh].mark.position is None and loaded[long].version == w.version
        # A batched-loaded watermark saves like any other.
        loaded[short].advance(WatermarkMark(SweepPosition(T, "x2"), 4), embedded=[], skipped=1)
        store.store(loaded[short])
        assert store.get(short, "m").mark.position == SweepPosition(T, "x2")
    finally:
        store.close()
