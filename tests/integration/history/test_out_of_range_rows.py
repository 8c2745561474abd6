"""Rows an older version stored with an instant outside the accepted range (ADR 0041),
simulated by direct SQL: never read, recorded once per event as poison of their own
partition (a bounded number per read), and deleted by the purge as expired."""

from __future__ import annotations

from tests.fakes import TEST_ACTOR

from memory.domain.history.feature_flags import SEMANTIC_SEARCH_FLAG
from memory.domain.history.partition import Partition
from memory.domain.history.sweep_plan import WatermarkMark

HOSTILE = [
    ("x1", "9999-12-31T23:59:59-14:00"),
    ("x2", "0001-01-01T00:00:00+14:00"),
    ("x3", "1969-07-20T20:17:00Z"),
]


def store_as_an_older_version(kit, org: str, channel: str) -> None:
    with kit.database.connection() as conn:
        for event_id, occurred_at in HOSTILE:
            conn.execute(
                "INSERT INTO dw_chat_events (org_id, event_id, provider, external_channel_id,"
                " sender, event_type, decision, message_text, occurred_at)"
                " VALUES (%s, %s, 'slack', %s, 'x', 'message', 'received',"
                " 'an impossible message about a password reset', %s::timestamptz)",
                (org, event_id, channel, occurred_at),
            )
        conn.execute(
            "INSERT INTO dw_chat_partitions VALUES (%s, 'slack', %s) ON CONFLICT DO NOTHING",
            (org, channel),
        )


def test_out_of_range_rows_are_poison_of_their_partition_a_bounded_number_per_read(
    make_runtime, kit
) -> None:
    runtime = make_runtime()
    runtime.service.set_global_flag(SEMANTIC_SEARCH_FLAG, True, actor=TEST_ACTOR)
    runtime.service.ingest("acme", [kit.message("ok1", 0), kit.message("ok2", 60, channel="C2")])
    store_as_an_older_version(kit, "acme", "C1")
    sweeper = kit.sweeper(runtime, poison_events_per_read=2)
    first = sweeper.run_pass()
    # Two per read: the visit that recorded a full read's worth left C1 due, and the pass'
    # next slice visited it again for the last one.
    assert (first.events_poisoned, first.windows_embedded, first.slices) == (3, 2, 2)
    assert sweeper.run_pass().events_poisoned == 0
    c1, c2 = runtime.service.sweep_status("acme").partitions
    assert sorted(p.event_id for p in c1.poison_events) == ["x1", "x2", "x3"]
    assert c2.poison_events == []
    assert sorted(kit.covered()) == ["ok1", "ok2"]


def test_the_purge_deletes_out_of_range_rows_as_expired_and_keeps_the_rest(
    make_runtime, kit
) -> None:
    runtime = make_runtime()
    runtime.service.ingest("acme", [kit.message("ok1", 0)])
    store_as_an_older_version(kit, "acme", "C1")
    store_as_an_older_version(kit, "other", "C1")
    report = runtime.service.purge("acme")
    assert report.events_deleted == 3
    remaining = kit.scalar(
        "SELECT array_agg(event_id ORDER BY event_id) FROM dw_chat_events WHERE org_id = 'acme'"
    )
    assert remaining == ["ok1"]
    assert kit.scalar("SELECT count(*) FROM dw_chat_events WHERE org_id = 'other'") == 3


def test_the_check_for_rows_out_of_range_reads_no_table_whatever_the_plan(
    make_runtime, kit
) -> None:
    # psycopg prepares a statement on its fifth run, and the server may then keep a generic
    # plan: asked as EXISTS (... occurred_at < earliest OR occurred_at > latest), that plan
    # guessed a third of a partition's rows out of range and scanned the table for the first
    # (2.9-4.5 s per slice of 128 partitions, docs/adr/0136). Forced here, it must still
    # probe the partition's index, and still find the rows out of range.
    runtime = make_runtime()
    events = [kit.message(f"m{i}", i * 0.5, channel=f"C{i % 4}") for i in range(800)]
    for i in range(0, len(events), 200):
        runtime.service.ingest("planned", events[i : i + 200])
    store_as_an_older_version(kit, "planned", "C9")
    with kit.database.connection() as conn:
        conn.execute("ANALYZE dw_chat_events")
    marks = [
        (Partition("planned", "slack", channel), WatermarkMark(None, 0))
        for channel in ("C0", "C1", "C2", "C3", "C9")
    ]
    with kit.database.transaction() as conn:
        conn.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        reads = runtime.events.read_main_many(marks, 50)
        alone = runtime.events.read_main(*marks[0], 50)
        row = conn.execute(
            "SELECT seq_scan FROM pg_stat_xact_user_tables WHERE relname = 'dw_chat_events'"
        ).fetchone()
    assert row is not None and row["seq_scan"] == 0
    assert [reads[p].out_of_range for p, _ in marks] == [False, False, False, False, True]
    assert not alone.out_of_range and len(alone.read.messages) == 50
