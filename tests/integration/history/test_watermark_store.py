"""The PostgreSQL watermark store (docs/adr/0148): a slice's batched load equals loading
each, a batch's save is part of the transaction it runs in, and a database whose watermarks
are still the eventsourcing library's event streams (docs/adr/0091) is carried over with
nothing lost."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any, ClassVar

import pytest
from eventsourcing.application import Application

from memory.application.history.watermarks import HISTORY_SWEEP_APPLICATION
from memory.domain.history.partition import Partition
from memory.domain.history.position import SweepPosition
from memory.domain.history.sweep_plan import WatermarkMark
from memory.domain.history.watermark import SweepWatermark, new_watermark
from memory.infrastructure.history.watermark_store import (
    PostgresSweepWatermarks,
    carry_over,
    open_sweep_watermarks,
)
from memory.infrastructure.postgres.database import Database
from memory.infrastructure.postgres.event_store import EventStoreConnection

T = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def mark(n: int, at: str = "e") -> WatermarkMark:
    return WatermarkMark(SweepPosition(T, f"{at}{n:04d}"), n)


def state(w: SweepWatermark) -> tuple[object, ...]:
    return (
        w.id,
        w.version,
        w.mark,
        w.windows_embedded,
        w.windows_skipped,
        w.is_stalled,
        w.stalls,
        w.last_stall_reason,
        w.poison_windows,
        w.poison_events,
        w.closed,
        w.created_on,
        w.modified_on,
    )


def test_a_batched_load_equals_loading_each_watermark(database: Database) -> None:
    store = open_sweep_watermarks(database)
    long, short, fresh = (Partition("acme", "slack", c) for c in ("LONG", "SHORT", "NONE"))
    w = store.get(long, "m")
    w.skip_poison_window(uuid.uuid4(), SweepPosition(T, "e0"), SweepPosition(T, "e0"), 1, "x")
    for i in range(1, 105):
        w.advance(mark(i), embedded=[], skipped=1)
        store.store(w)
    s = store.get(short, "m")
    s.advance(mark(3, "x"), embedded=[uuid.uuid4()], skipped=0)
    s.stall("model_unavailable")
    store.store(s)
    other_model = store.get(short, "other")
    other_model.advance(mark(9, "y"), embedded=[], skipped=2)
    store.store(other_model)

    loaded = store.get_many([long, short, fresh], "m")
    for partition in (long, short):
        assert state(loaded[partition]) == state(store.get(partition, "m"))
    assert state(loaded[fresh])[:-2] == state(new_watermark(fresh, "m"))[:-2]
    assert state(loaded[long]) == state(w)
    # A batched-loaded watermark saves like any other.
    loaded[short].advance(mark(4, "x"), embedded=[], skipped=1)
    store.store(loaded[short])
    assert store.get(short, "m").mark == mark(4, "x")
    # One row per partition and model, its readable columns kept with the state.
    with database.connection() as conn:
        rows = conn.execute(
            "SELECT external_channel_id, model, version, position_event_id, seen_seq,"
            " windows_embedded FROM dw_sweep_watermarks ORDER BY 1, 2"
        ).fetchall()
    assert [tuple(r.values()) for r in rows] == [
        ("LONG", "m", 106, "e0104", 104, 0),
        ("SHORT", "m", 4, "x0004", 4, 1),
        ("SHORT", "other", 2, "y0009", 9, 0),
    ]


def test_a_batch_is_saved_in_the_transaction_it_runs_in(database: Database) -> None:
    store = PostgresSweepWatermarks(database)
    p1, p2 = Partition("acme", "slack", "C1"), Partition("acme", "slack", "C2")
    first = store.get(p1, "m")
    first.advance(mark(1), embedded=[], skipped=0)
    store.store(first)
    a, b = store.get(p1, "m"), store.get(p2, "m")
    a.advance(mark(2), embedded=[], skipped=0)
    b.advance(mark(5), embedded=[], skipped=0)
    with pytest.raises(RuntimeError), database.transaction() as conn:
        conn.execute("CREATE TABLE doomed (x int)")
        store.store_many([a, b])
        assert store.get(p1, "m").mark == mark(2)  # visible inside the transaction
        raise RuntimeError("the batch's windows failed")
    # Rolled back with the transaction: as it was before.
    assert store.get(p1, "m").mark == mark(1) and store.find(p2, "m") is None
    a, b = store.get(p1, "m"), store.get(p2, "m")
    a.advance(mark(2), embedded=[], skipped=0)
    b.advance(mark(5), embedded=[], skipped=0)
    with database.transaction():
        store.store_many([a, b])
    assert (store.get(p1, "m").mark, store.get(p2, "m").mark) == (mark(2), mark(5))


class OldSweepWatermarks(Application[uuid.UUID]):
    """The store before ADR 0148: the library's application over its own tables, with a
    snapshot every 50 events (what deployments have written)."""

    name = HISTORY_SWEEP_APPLICATION
    snapshotting_intervals: ClassVar[dict[type[Any], int]] = {SweepWatermark: 50}


def test_an_event_sourced_database_is_carried_over_with_nothing_lost(database: Database) -> None:
    old = OldSweepWatermarks(
        EventStoreConnection.for_database(database).env(HISTORY_SWEEP_APPLICATION)
    )
    parts = [Partition("acme", "slack", f"C{i}") for i in range(5)] + [
        Partition("beta", "whatsapp", "+15550100")
    ]
    written: list[SweepWatermark] = []
    try:
        long = new_watermark(parts[0], "m")
        long.skip_poison_window(uuid.uuid4(), SweepPosition(T, "a"), SweepPosition(T, "b"), 2, "x")
        long.skip_poison_event("e9", "0001-01-01 00:00:00+00 BC", "occurred_at_out_of_range")
        for i in range(1, 123):  # two snapshots and events after them
            long.advance(mark(i), embedded=[uuid.uuid4()], skipped=i % 2)
            old.save(long)
        long.stall("model_unavailable")
        old.save(long)
        stalled = new_watermark(parts[1], "m")
        stalled.stall("model_misconfigured")
        closed = new_watermark(parts[2], "m")
        closed.advance(mark(3), embedded=[], skipped=1)
        closed.close()
        other_model = new_watermark(parts[1], "other:model")
        other_model.advance(mark(7), embedded=[], skipped=0)
        late = new_watermark(parts[5], "m")
        late.advance(mark(4, "m"), embedded=[], skipped=0)
        late.consume_late(9, SweepPosition(T, "l1"), caught_up=False, embedded=[], skipped=0)
        old.save(stalled, closed, other_model, late)
        written = [long, stalled, closed, other_model, late]
        expected = {w.id: state(old.repository.get(w.id)) for w in written}
        assert expected[long.id] == state(long)
    finally:
        old.close()
    with database.connection() as conn:
        events = conn.execute("SELECT count(*) AS n FROM historysweep_events").fetchone()
        snapshots = conn.execute("SELECT count(*) AS n FROM historysweep_snapshots").fetchone()
    assert events is not None and snapshots is not None and snapshots["n"] == 2

    store = open_sweep_watermarks(database)
    loaded = {w.id: store.get(w.partition, w.model) for w in written}
    assert {i: state(w) for i, w in loaded.items()} == expected
    assert loaded[long.id].mark.late is None and loaded[late.id].mark.late is not None
    assert loaded[closed.id].closed and loaded[stalled.id].is_stalled
    # The old tables are kept under another name, whole; a second start carries nothing.
    with database.connection() as conn:
        gone = conn.execute("SELECT to_regclass('historysweep_events') AS t").fetchone()
        kept = conn.execute("SELECT count(*) AS n FROM historysweep_events_carried").fetchone()
        kept_snapshots = conn.execute(
            "SELECT count(*) AS n FROM historysweep_snapshots_carried"
        ).fetchone()
    assert gone is not None and gone["t"] is None
    assert kept == events and kept_snapshots == snapshots
    assert carry_over(database) == 0
    # The carried watermarks go on as any other.
    w = loaded[long.id]
    w.advance(mark(200), embedded=[], skipped=0)
    store.store(w)
    assert state(store.get(parts[0], "m")) == state(w)


def save_in_old_stream(database: Database, partition: Partition, at: WatermarkMark) -> None:
    """A watermark advanced to `at`, saved the way the versions before ADR 0148 saved it."""
    old = OldSweepWatermarks(
        EventStoreConnection.for_database(database).env(HISTORY_SWEEP_APPLICATION)
    )
    try:
        w = new_watermark(partition, "m")
        w.advance(at, embedded=[], skipped=0)
        old.save(w)
    finally:
        old.close()


def test_a_watermark_saved_since_wins_over_its_old_stream(database: Database) -> None:
    p = Partition("acme", "slack", "C1")
    save_in_old_stream(database, p, mark(1))
    newer = new_watermark(p, "m")
    newer.advance(mark(5), embedded=[], skipped=0)
    PostgresSweepWatermarks(database).store(newer)
    assert carry_over(database) == 0
    assert PostgresSweepWatermarks(database).get(p, "m").mark == mark(5)
    # An older version started again (its library created its tables anew) and saved one
    # more: the next start carries it over too, keeping both old tables.
    other = Partition("acme", "slack", "C2")
    save_in_old_stream(database, other, mark(2))
    assert carry_over(database) == 1
    assert PostgresSweepWatermarks(database).get(other, "m").mark == mark(2)
    with database.connection() as conn:
        kept = conn.execute(
            "SELECT count(*) AS n FROM historysweep_events_carried"
            " UNION ALL SELECT count(*) FROM historysweep_events_carried_2"
        ).fetchall()
    assert [r["n"] for r in kept] == [2, 2]
