"""`OrgDirectoryStore`: the orgs the history context knows, a page at a time, with the sums
of the sweep's last visits, against `InMemoryOrgDirectory` over the other fakes and
`PostgresOrgDirectory` over its maintained tables (docs/adr/0070, 0093, 0125)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.fakes import chat_message
from tests.integration.port_contracts.implementations import HistoryAdapters

from memory.application.history.ports import (
    DueQuery,
    OrgPageQuery,
    OrgRow,
    PartitionVisit,
    SweepTotals,
    VisitOutcome,
)
from memory.domain.history.feature_flags import MODULE_FLAG, SEMANTIC_SEARCH_FLAG
from memory.domain.history.partition import Partition
from memory.domain.history.partition_listing import PartitionKey
from memory.domain.history.position import SweepPosition

MODEL = "hash:1024"
OTHER = "other:model"
OCCURRED = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
T1 = datetime(2026, 11, 3, 9, 0, tzinfo=UTC)


def ingest(history: HistoryAdapters, org: str, channel: str, count: int = 1, **fields: str) -> None:
    history.events.append(
        org,
        [
            chat_message(f"{org}-{channel}-{fields}-{n}", OCCURRED, channel_id=channel, **fields)
            for n in range(count)
        ],
    )


def page(history: HistoryAdapters, limit: int = 10, **query: Any) -> list[OrgRow]:
    now = datetime.now(UTC) + timedelta(minutes=1)
    return history.directory.page(
        replace(OrgPageQuery(None, None, None, limit, MODEL, now), **query)
    )


def ids(rows: list[OrgRow]) -> list[str]:
    return [r.org_id for r in rows]


def visit(
    partition: Partition,
    at: datetime,
    *,
    model: str = MODEL,
    windows: int = 0,
    poison: int = 0,
    poison_events: int = 0,
    stalled: bool = False,
    open_windows: int = 0,
    embedded: bool = False,
) -> PartitionVisit:
    return PartitionVisit(
        partition,
        model,
        SweepPosition(OCCURRED, "e1"),
        windows,
        poison,
        poison_events,
        stalled,
        open_windows,
        embedded,
        at,
    )


def test_a_page_lists_the_known_orgs_in_byte_order_with_counts_flags_and_retention(
    history: HistoryAdapters,
) -> None:
    ingest(history, "acme", "C1", 2)
    ingest(history, "acme", "C2")
    ingest(history, "Zeta", "C1")
    history.flags.set_org("globex-eu", SEMANTIC_SEARCH_FLAG, True)
    history.retention.set_days("globex", 30)
    history.flags.set_org("initech", MODULE_FLAG, False)
    history.flags.set_org("initech", MODULE_FLAG, None)  # nothing left: not known
    rows = page(history)
    assert ids(rows) == ["Zeta", "acme", "globex", "globex-eu"]
    acme = rows[1]
    assert (acme.partitions, acme.messages, acme.org_flags, acme.retention_days) == (2, 3, {}, None)
    assert (acme.open_windows, acme.poison_windows, acme.poison_events) == (0, 0, 0)
    assert (acme.last_swept_at, acme.last_embedded_at) == (None, None)
    assert rows[2].retention_days == 30 and rows[2].partitions == 0
    assert rows[3].org_flags == {SEMANTIC_SEARCH_FLAG: True}
    assert ids(page(history, 2, after="acme")) == ["globex", "globex-eu"]
    assert ids(page(history, prefix="glob")) == ["globex", "globex-eu"]
    assert ids(page(history, prefix="glob", after="globex")) == ["globex-eu"]
    assert ids(page(history, visible=frozenset({"acme", "globex", "nobody"}))) == [
        "acme",
        "globex",
    ]
    assert ids(page(history, prefix="z")) == []


def test_the_sweeps_last_visits_are_summed_per_org_and_model(history: HistoryAdapters) -> None:
    for channel in ("C1", "C2", "C3"):
        ingest(history, "acme", channel)
    c1, c2 = Partition("acme", "slack", "C1"), Partition("acme", "slack", "C2")
    t2, t3 = T1 + timedelta(minutes=5), T1 + timedelta(minutes=9)
    history.directory.record_visits(
        [
            visit(c1, T1, windows=3, poison=1, open_windows=1, embedded=True),
            visit(c2, t2, windows=2, poison_events=2, stalled=True),
            visit(Partition("acme", "slack", "GONE"), t3, windows=9),  # no such partition
            visit(c1, t3, model=OTHER, windows=7, embedded=True),
        ]
    )
    totals = history.directory.sweep_totals("acme", MODEL)
    assert totals == SweepTotals(3, 3, 2, 5, 1, 1, 2, 1, t2, T1)
    (acme,) = page(history)
    assert (acme.open_windows, acme.poison_windows, acme.poison_events) == (1, 1, 2)
    assert (acme.last_swept_at, acme.last_embedded_at) == (t2, T1)

    # A later visit replaces its partition's state; one that embedded nothing keeps when the
    # partition last embedded.
    history.directory.record_visits([visit(c1, t3, windows=3)])
    totals = history.directory.sweep_totals("acme", MODEL)
    assert (totals.open_windows, totals.poison_windows, totals.windows_embedded) == (0, 0, 5)
    assert (totals.last_swept_at, totals.last_embedded_at) == (t3, T1)

    assert history.directory.forget_model(MODEL) == 2
    assert history.directory.sweep_totals("acme", MODEL) == SweepTotals(
        3, 3, 0, 0, 0, 0, 0, 0, None, None
    )
    assert history.directory.sweep_totals("acme", OTHER).windows_embedded == 7
    assert history.directory.sweep_totals("nobody", MODEL) == SweepTotals(
        0, 0, 0, 0, 0, 0, 0, 0, None, None
    )


def test_partitions_come_a_keyset_page_at_a_time_and_settled_ones_are_named(
    history: HistoryAdapters,
) -> None:
    ingest(history, "acme", "C1")
    ingest(history, "acme", "C2")
    ingest(history, "acme", "C1", provider="teams")
    ingest(history, "globex", "C1")
    acme = [
        Partition("acme", "slack", "C1"),
        Partition("acme", "slack", "C2"),
        Partition("acme", "teams", "C1"),
    ]
    assert history.directory.partitions_after("acme", None, 2) == acme[:2]
    assert history.directory.partitions_after("acme", PartitionKey("slack", "C2"), 2) == acme[2:]
    assert history.directory.partitions_after("acme", PartitionKey("teams", "C1"), 2) == []

    assert history.directory.settled("acme", MODEL, acme) == set()
    seeded = datetime.now(UTC)
    history.schedule.register(MODEL, seeded)
    now = datetime.now(UTC) + timedelta(minutes=1)
    visits = history.schedule.due(DueQuery(MODEL, now, 10, (), org_id="acme"))
    (first,) = [v for v in visits if v.partition == acme[0]]
    history.schedule.finish(MODEL, [VisitOutcome(acme[0], first.changes, None, 0)], now)
    assert history.directory.settled("acme", MODEL, acme) == {acme[0]}
    assert history.directory.settled("acme", OTHER, acme) == set()
    # The page says since when the org's oldest work waits (the schedule's state).
    rows = {r.org_id: r for r in page(history)}
    assert rows["acme"].waiting_since == seeded and rows["globex"].waiting_since == seeded
    outcomes = [VisitOutcome(v.partition, v.changes, None, 0) for v in visits if v != first]
    history.schedule.finish(MODEL, outcomes, now)
    assert {r.org_id: r.waiting_since for r in page(history)} == {"acme": None, "globex": seeded}
