"""The sweep status on a real database (docs/adr/0093): an org's partitions a keyset page at
a time, and its totals as counts the triggers of migration 0210 keep equal to the sources
through ingest, sweep visits, stalls, poison, erasure and model drops."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from tests.fakes import TEST_ACTOR

from memory.application.history.ports import PartitionVisit, SweepTotals
from memory.domain.errors import InvalidInput
from memory.domain.history.partition import Partition
from memory.domain.history.partition_listing import PartitionKey
from memory.domain.history.position import SweepPosition
from memory.domain.history.watermark import StallReason, SweepWatermark
from memory.entrypoints.history_runtime import HistoryRuntime
from memory.infrastructure.history.org_directory import PostgresOrgDirectory

MIGRATION = "0210_history_sweep_totals.sql"
PER_STATEMENT = "0228_history_sweep_totals_per_statement.sql"

# The totals computed the obvious way, from the source tables (what the triggers maintain).
FROM_SOURCES = """
SELECT
    (SELECT count(*) FROM dw_chat_partitions WHERE org_id = %(org)s) AS partitions,
    (SELECT count(*) FROM dw_chat_events WHERE org_id = %(org)s) AS messages,
    count(s.*) AS partitions_swept,
    coalesce(sum(s.windows_embedded), 0) AS windows_embedded,
    coalesce(sum(s.open_windows), 0) AS open_windows,
    coalesce(sum(s.poison_windows), 0) AS poison_windows,
    coalesce(sum(s.poison_events), 0) AS poison_events,
    count(*) FILTER (WHERE s.stalled) AS partitions_stalled,
    max(s.swept_at) AS last_swept_at,
    max(s.embedded_at) AS last_embedded_at
FROM dw_sweep_partition_state s WHERE s.org_id = %(org)s AND s.model = %(model)s
"""


def from_sources(kit: Any, org: str, model: str) -> SweepTotals:
    with kit.database.connection() as conn:
        row = conn.execute(FROM_SOURCES, {"org": org, "model": model}).fetchone()
    return SweepTotals(**row)


def every_page(runtime: HistoryRuntime, org: str, limit: int) -> list[list[str]]:
    pages, cursor = [], None
    while True:
        page = runtime.service.sweep_status(org, limit=limit, cursor=cursor)
        pages.append([f"{s.partition.provider}/{s.partition.channel_id}" for s in page.partitions])
        if page.next_cursor is None:
            return pages
        cursor = page.next_cursor


def test_partitions_are_paged_once_each_in_order_and_new_ones_never_shift_pages(
    make_runtime, kit
) -> None:
    runtime = make_runtime()
    channels = [("slack", f"C{i}") for i in (3, 1, 6, 2, 5)] + [("teams", "T1"), ("api", "A")]
    runtime.service.ingest(
        "acme",
        [kit.message(f"m{p}{c}", 0, provider=p, channel=c) for p, c in channels],
    )
    runtime.service.ingest("acme-2", [kit.message("other", 0, channel="C0")])
    assert every_page(runtime, "acme", 3) == [
        ["api/A", "slack/C1", "slack/C2"],
        ["slack/C3", "slack/C5", "slack/C6"],
        ["teams/T1"],
    ]
    first = runtime.service.sweep_status("acme", limit=3)
    assert first.totals.partitions == 7
    # A partition before the cursor is not seen by the next page; one after it is.
    runtime.service.ingest(
        "acme",
        [kit.message("early", 0, channel="C0"), kit.message("late", 0, channel="C4")],
    )
    second = runtime.service.sweep_status("acme", limit=3, cursor=first.next_cursor)
    assert [s.partition.channel_id for s in second.partitions] == ["C3", "C4", "C5"]
    assert second.totals.partitions == 9
    # An org without partitions answers an empty last page.
    empty = runtime.service.sweep_status("nobody")
    assert (empty.partitions, empty.next_cursor, empty.totals.partitions) == ([], None, 0)


def test_a_bad_cursor_or_limit_is_refused_naming_it(make_runtime, kit) -> None:
    runtime = make_runtime()
    runtime.service.ingest("acme", [kit.message("a", 0), kit.message("b", 0, channel="C2")])
    runtime.service.ingest("globex", [kit.message("g", 0)])
    cursor = runtime.service.sweep_status("acme", limit=1).next_cursor
    assert cursor is not None
    directory_cursor = runtime.service.orgs(limit=1).next_cursor
    for kwargs in (
        {"org_id": "globex", "cursor": cursor},  # another org's
        {"org_id": "acme", "cursor": directory_cursor},  # another listing's
        {"org_id": "acme", "cursor": cursor[:-2] + ("AA" if cursor[-2:] != "AA" else "BB")},
        {"org_id": "acme", "cursor": "nonsense"},
    ):
        with pytest.raises(InvalidInput) as refused:
            runtime.service.sweep_status(**kwargs)
        assert refused.value.field == "cursor", kwargs
    for limit in (0, 201):
        with pytest.raises(InvalidInput) as refused:
            runtime.service.sweep_status("acme", limit=limit)
        assert refused.value.field == "limit"


def test_a_page_deep_in_a_large_org_reads_only_its_own_rows(make_runtime, kit) -> None:
    runtime = make_runtime()
    with kit.database.connection() as conn:
        conn.execute(
            "INSERT INTO dw_chat_partitions (org_id, provider, external_channel_id)"
            " SELECT 'acme', 'slack', 'C' || lpad(i::text, 5, '0')"
            " FROM generate_series(1, 3000) AS i"
        )
        conn.execute("ANALYZE dw_chat_partitions")
    directory = PostgresOrgDirectory(kit.database)
    page = directory.partitions_after("acme", PartitionKey("slack", "C02000"), 6)
    assert [p.channel_id for p in page] == [f"C0{i}" for i in range(2001, 2007)]
    # The keyset is the index scan's start, not a filter over the rows before it.
    with kit.database.connection() as conn:
        (plan,) = (
            conn.execute(
                "EXPLAIN (ANALYZE, FORMAT JSON) SELECT provider, external_channel_id"
                " FROM dw_chat_partitions WHERE org_id = 'acme'"
                " AND (org_id, provider, external_channel_id) > ('acme', 'slack', 'C02000')"
                " ORDER BY org_id, provider, external_channel_id LIMIT 6"
            )
            .fetchone()
            .values()
        )
    scans = list(_nodes(json.loads(plan) if isinstance(plan, str) else plan))
    scan = next(n for n in scans if "Index" in n["Node Type"])
    assert scan["Actual Rows"] == 6
    assert scan.get("Rows Removed by Filter", 0) == 0
    assert directory.sweep_totals("acme", runtime.service.model_id).partitions == 3000


def _nodes(plan: Any) -> Any:
    stack = list(plan) if isinstance(plan, list) else [plan]
    while stack:
        node = stack.pop()
        node = node.get("Plan", node)
        yield node
        stack.extend(node.get("Plans", []))


def test_totals_stay_equal_to_their_sources_through_every_write(make_runtime, kit, clock) -> None:
    runtime: HistoryRuntime = make_runtime()
    kit.enable_semantic(runtime)
    model = runtime.service.model_id
    open_minute = (clock() - kit.T0 - timedelta(minutes=5)).total_seconds() / 60

    def check(org: str = "acme") -> SweepTotals:
        totals = runtime.service.sweep_status(org, limit=1).totals
        assert totals == from_sources(kit, org, model)
        return totals

    assert check() == SweepTotals(0, 0, 0, 0, 0, 0, 0, 0, None, None)
    runtime.service.ingest(
        "acme",
        [
            kit.message("g1", 0, "a perfectly fine question about invoices"),
            kit.message("x1", 60, "this window makes the model choke POISON"),
            kit.message("g2", 120, "another fine question about refunds"),
            kit.message("o1", open_minute, "a conversation that is still going on"),
            kit.message("q1", 0, "a question in another channel", channel="C2"),
            kit.message("r1", 0, "a question from the other sender", channel="C3", sender="mei"),
        ],
    )
    runtime.service.ingest("globex", [kit.message("g1", 0, "a question of another org")])
    assert check().partitions == 3
    runtime.model.reject_marker = "POISON"  # type: ignore[attr-defined]
    runtime.service.sweep(trigger="test")
    swept = check()
    assert (swept.partitions_swept, swept.windows_embedded) == (3, 4)
    assert (swept.open_windows, swept.poison_windows, swept.last_swept_at) == (1, 1, clock())
    check("globex")

    # A stall, then its recovery: updates of the same state rows.
    runtime.service.ingest("acme", [kit.message("s1", 200, channel="C2")])
    runtime.model.down = True  # type: ignore[attr-defined]
    clock.advance(minutes=1)
    runtime.service.sweep("acme", trigger="test")
    assert check().partitions_stalled >= 1
    runtime.model.down = False  # type: ignore[attr-defined]
    clock.advance(minutes=1)
    runtime.service.sweep("acme", trigger="test")
    assert check().partitions_stalled == 0

    runtime.service.erase_events("acme", sender="mei", actor=TEST_ACTOR)
    check()
    runtime.service.sweep(trigger="test")
    check()
    with kit.database.connection() as conn:
        conn.execute(
            "UPDATE dw_sweep_partition_state SET model = 'old:model' WHERE org_id = 'acme'"
        )
    assert check().partitions_swept == 0
    assert from_sources(kit, "acme", "old:model").partitions_swept == 3
    runtime.service.drop_model("old:model", actor=TEST_ACTOR)
    assert kit.scalar("SELECT count(*) FROM dw_org_sweep_totals WHERE model = 'old:model'") == 0
    runtime.service.sweep(trigger="test")
    check()
    runtime.service.erase_org("acme", actor=TEST_ACTOR)
    assert check() == SweepTotals(0, 0, 0, 0, 0, 0, 0, 0, None, None)
    check("globex")


def test_the_migration_counts_what_existed_before_it(make_runtime, kit) -> None:
    runtime = make_runtime()
    kit.enable_semantic(runtime)
    runtime.service.ingest("acme", [kit.message("a", 0), kit.message("b", 0, channel="C2")])
    runtime.service.sweep(trigger="test")
    model = runtime.service.model_id
    before = from_sources(kit, "acme", model)
    assert before.partitions_swept == 2
    # Undo migrations 0210 and 0228 (its triggers per statement), then apply them again
    # over the rows written meanwhile.
    with kit.database.connection() as conn:
        conn.execute(
            "DROP TRIGGER dw_orgs_partitions_added ON dw_chat_partitions;"
            " DROP TRIGGER dw_orgs_partitions_removed ON dw_chat_partitions;"
            " DROP TRIGGER dw_org_sweep_totals_inserted ON dw_sweep_partition_state;"
            " DROP TRIGGER dw_org_sweep_totals_updated ON dw_sweep_partition_state;"
            " DROP TRIGGER dw_org_sweep_totals_removed ON dw_sweep_partition_state;"
            " DROP TABLE dw_org_sweep_totals;"
            " DROP FUNCTION dw_org_sweep_totals_add, dw_org_sweep_totals_forget,"
            " dw_orgs_count_partitions_added, dw_orgs_count_partitions_removed;"
            " ALTER TABLE dw_orgs DROP COLUMN partitions;"
        )
        conn.execute(
            "DELETE FROM memory_schema_migrations WHERE name = ANY(%s)",
            ([MIGRATION, PER_STATEMENT],),
        )
    assert kit.database.migrate() == [MIGRATION, PER_STATEMENT]
    assert runtime.service.sweep_status("acme").totals == before


def test_only_partitions_with_work_waiting_read_their_messages(
    make_runtime, kit, clock, monkeypatch
) -> None:
    runtime = make_runtime()
    kit.enable_semantic(runtime)
    runtime.service.ingest("acme", [kit.message(f"m{c}", 0, channel=f"C{c}") for c in range(4)])
    runtime.service.sweep(trigger="test")
    clock.advance(minutes=1)
    runtime.service.ingest("acme", [kit.message("late", 10, channel="C2")])
    reads: list[str] = []
    for name in ("read_main", "read_late", "count_unconsumed"):
        real = getattr(runtime.events, name)

        def spy(partition, *args, _real=real, **kwargs):
            reads.append(partition.channel_id)
            return _real(partition, *args, **kwargs)

        monkeypatch.setattr(runtime.events, name, spy)
    page = runtime.service.sweep_status("acme")
    assert set(reads) == {"C2"}
    lag = {s.partition.channel_id: (s.lag_events, s.windows_embedded) for s in page.partitions}
    assert lag == {"C0": (0, 1), "C1": (0, 1), "C2": (1, 1), "C3": (0, 1)}


def test_a_page_of_watermarks_loads_in_one_read_as_the_library_loads_each(
    make_runtime, kit
) -> None:
    runtime = make_runtime()
    kit.enable_semantic(runtime)
    runtime.service.ingest("acme", [kit.message(f"m{c}", 0, channel=f"C{c}") for c in range(3)])
    runtime.service.sweep(trigger="test")
    model = runtime.service.model_id
    busy = Partition("acme", "slack", "C1")
    watermark = runtime.watermarks.get(busy, model)
    reasons = (StallReason.MODEL_UNAVAILABLE, StallReason.MODEL_MISCONFIGURED)
    for i in range(121):  # a long history (past the old store's snapshots)
        watermark.stall(reasons[i % 2])
    runtime.watermarks.store(watermark)
    page = [Partition("acme", "slack", f"C{c}") for c in (2, 1, 0)] + [
        Partition("acme", "slack", "never-swept")
    ]
    # The status page loads through the sweep's own batched load (docs/adr/0091): one
    # statement on the service's pool (docs/adr/0148).
    database = runtime.database
    reads: list[str] = []
    unwrapped = database.read

    def counted(work, **kwargs):
        reads.append("read")
        return unwrapped(work, **kwargs)

    database.read = counted  # type: ignore[method-assign]
    try:
        found = runtime.watermarks.get_many(page, model)
    finally:
        del database.read
    assert len(reads) == 1
    loaded = [found[p] for p in page]

    def seen(w: SweepWatermark) -> tuple[object, ...]:
        return (
            w.id,
            w.version,
            w.mark,
            w.windows_embedded,
            w.windows_skipped,
            w.poison_windows,
            w.poison_events,
            w.is_stalled,
            w.last_stall_reason,
            w.last_stall_at,
            w.last_advanced_at,
        )

    assert [seen(w) for w in loaded] == [seen(runtime.watermarks.get(p, model)) for p in page]
    assert (loaded[1].version, loaded[1].last_stall_reason) == (
        watermark.version,
        StallReason.MODEL_UNAVAILABLE,
    )
    assert watermark.version > 120
    assert (loaded[3].mark.position, loaded[3].windows_embedded) == (None, 0)
    # One row whatever the history's length.
    assert (
        kit.scalar("SELECT count(*) FROM dw_sweep_watermarks WHERE id = %s", (watermark.id,)) == 1
    )


def test_a_slices_visits_update_the_orgs_totals_once_not_once_per_partition(
    make_runtime, kit, clock
) -> None:
    runtime = make_runtime()
    channels = [f"C{c:02d}" for c in range(40)]
    runtime.service.ingest("acme", [kit.message(f"m{c}", 0, channel=c) for c in channels])
    runtime.service.ingest("beta", [kit.message("b", 0, channel="B1")])
    model = runtime.service.model_id
    directory = PostgresOrgDirectory(kit.database)

    def visits(windows: int, *, stalled: bool) -> list[PartitionVisit]:
        return [
            PartitionVisit(
                partition=Partition(org, "slack", c),
                model=model,
                position=SweepPosition(kit.at(i), f"m{c}"),
                windows_embedded=windows,
                poison_windows=i % 2,
                poison_events=0,
                stalled=stalled and i % 3 == 0,
                open_windows=1,
                embedded=windows > 0,
                at=clock.now,
            )
            for org, cs in (("acme", channels), ("beta", ["B1"]))
            for i, c in enumerate(cs)
        ]

    with kit.database.transaction() as conn:
        directory.record_visits(visits(1, stalled=False))  # inserted
        clock.advance(minutes=1)
        directory.record_visits(visits(3, stalled=True))  # updated
        row = conn.execute(
            "SELECT n_tup_ins, n_tup_upd FROM pg_stat_xact_user_tables"
            " WHERE relname = 'dw_org_sweep_totals'"
        ).fetchone()
    # Per org: one insert of its totals row, one update (a row trigger: 41 updates of acme's).
    assert row is not None and (row["n_tup_ins"], row["n_tup_upd"]) == (2, 2)
    for org in ("acme", "beta"):
        totals = runtime.service.sweep_status(org).totals
        assert totals == from_sources(kit, org, model)
    acme = runtime.service.sweep_status("acme").totals
    assert (acme.partitions_swept, acme.windows_embedded, acme.partitions_stalled) == (40, 120, 14)
