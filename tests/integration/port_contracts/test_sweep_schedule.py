"""`SweepSchedule`: which partitions have work for the sweep (docs/adr/0089), marked by the
event log's ingest and cleared by the end of a visit, against `InMemorySweepSchedule` over
the in-memory log and `PostgresSweepSchedule` over `dw_sweep_work` (docs/adr/0125)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.fakes import chat_message
from tests.integration.port_contracts.implementations import HistoryAdapters

from memory.application.history.ports import (
    BacklogQuery,
    DueQuery,
    DueVisit,
    OrgWaiting,
    SweepBacklog,
    VisitOutcome,
)
from memory.domain.history.feature_flags import SEMANTIC_SEARCH_FLAG, GlobalState
from memory.domain.history.partition import Partition

MODEL = "hash:1024"
OTHER = "other:model"
# Messages occurred well before anything here, so every window question is settled.
OCCURRED = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
REQUIRED = (SEMANTIC_SEARCH_FLAG,)


def p(org: str, channel: str = "C1") -> Partition:
    return Partition(org, "slack", channel)


def ingest(history: HistoryAdapters, org: str, *channels: str, **fields: str) -> None:
    history.events.append(
        org,
        [
            chat_message(
                f"{org}-{c}-{datetime.now(UTC).timestamp()}", OCCURRED, channel_id=c, **fields
            )
            for c in channels
        ],
    )


def soon() -> datetime:
    """A moment after every ingest so far (ingest stamps its work with the wall clock)."""
    return datetime.now(UTC) + timedelta(minutes=1)


def due(history: HistoryAdapters, *, limit: int = 10, **query: Any) -> list[DueVisit]:
    return history.schedule.due(replace(DueQuery(MODEL, soon(), limit, ()), **query))


def backlog_of(history: HistoryAdapters, **query: Any) -> SweepBacklog:
    return history.schedule.backlog(replace(BacklogQuery(MODEL, soon(), 5, ()), **query))


def test_a_new_model_makes_every_partition_due_taken_round_robin_across_orgs(
    history: HistoryAdapters,
) -> None:
    before = datetime.now(UTC)
    ingest(history, "acme", "C1", "C2", "C3")
    ingest(history, "globex", "C1")
    after = datetime.now(UTC)
    # Before any sweeper registered the model every partition waits, since its first message.
    unregistered = history.schedule.backlog(BacklogQuery(MODEL, soon(), 5, ()))
    assert (unregistered.partitions, unregistered.orgs) == (4, 2)
    assert unregistered.oldest_since is not None and before <= unregistered.oldest_since <= after
    assert history.schedule.pending_windows("acme", MODEL) == 3
    assert due(history) == []

    seeded = datetime.now(UTC)
    assert history.schedule.register(MODEL, seeded)
    assert not history.schedule.register(MODEL, soon())
    assert due(history) == [
        DueVisit(p("acme", "C1"), 0),
        DueVisit(p("globex", "C1"), 0),
        DueVisit(p("acme", "C2"), 0),
        DueVisit(p("acme", "C3"), 0),
    ]
    assert [v.partition for v in due(history, limit=2)] == [p("acme", "C1"), p("globex", "C1")]
    assert due(history, org_id="globex") == [DueVisit(p("globex", "C1"), 0)]
    assert due(history, model=OTHER) == []
    backlog = history.schedule.backlog(BacklogQuery(MODEL, soon(), 1, ()))
    assert (backlog.partitions, backlog.orgs, backlog.oldest_since) == (4, 2, seeded)
    assert backlog.longest == (OrgWaiting("acme", 3, seeded),)
    assert backlog.others_since == seeded
    assert history.schedule.pending_windows("acme", MODEL) == 3


def test_a_visit_clears_its_partition_unless_an_ingest_came_since(
    history: HistoryAdapters,
) -> None:
    schedule = history.schedule
    assert schedule.register(MODEL, datetime.now(UTC))
    ingest(history, "acme", "C1")
    (taken,) = due(history)
    assert taken == DueVisit(p("acme", "C1"), 1)
    schedule.finish(MODEL, [VisitOutcome(taken.partition, taken.changes, None, 0)], soon())
    assert due(history) == [] and schedule.pending_windows("acme", MODEL) == 0
    assert backlog_of(history).partitions == 0

    ingest(history, "acme", "C1")
    (taken,) = due(history)
    ingest(history, "acme", "C1")  # while the visit runs: it may not have seen this one
    schedule.finish(MODEL, [VisitOutcome(taken.partition, taken.changes, None, 0)], soon())
    (again,) = due(history)
    assert again.changes == taken.changes + 1
    assert schedule.pending_windows("acme", MODEL) == 1

    # An open tail: due again when its gap elapses, waiting since then.
    gap_ends = soon() + timedelta(minutes=30)
    schedule.finish(MODEL, [VisitOutcome(again.partition, again.changes, gap_ends, 2)], soon())
    assert due(history) == [] and schedule.pending_windows("acme", MODEL) == 2
    assert due(history, now=gap_ends) == [DueVisit(p("acme", "C1"), again.changes)]
    later = history.schedule.backlog(BacklogQuery(MODEL, gap_ends, 5, ()))
    assert (later.partitions, later.oldest_since) == (1, gap_ends)

    # Traffic the sweep never embeds (denied) marks no work; another model's work is its own.
    ingest(history, "acme", "C2", decision="denied")
    assert [v.partition for v in due(history, now=gap_ends)] == [p("acme", "C1")]
    assert schedule.register(OTHER, datetime.now(UTC))
    assert [v.partition for v in due(history, model=OTHER)] == [p("acme", "C1"), p("acme", "C2")]


def test_orgs_with_a_required_flag_off_or_not_opted_in_are_left_out(
    history: HistoryAdapters,
) -> None:
    for org in ("acme", "globex", "initech"):
        ingest(history, org, "C1")
    assert history.schedule.register(MODEL, datetime.now(UTC))

    def orgs(required: tuple[str, ...] = REQUIRED) -> tuple[list[str], int]:
        taken = [v.partition.org_id for v in due(history, required_flags=required)]
        return taken, backlog_of(history, required_flags=required).orgs

    assert orgs() == (["acme", "globex", "initech"], 3)
    history.flags.set_org("globex", SEMANTIC_SEARCH_FLAG, False)
    assert orgs() == (["acme", "initech"], 2)
    assert orgs(()) == (["acme", "globex", "initech"], 3)
    # Under opt_in only the orgs that turned it on have it (docs/adr/0131).
    history.flags.set_global(SEMANTIC_SEARCH_FLAG, GlobalState.OPT_IN)
    assert orgs() == ([], 0)
    history.flags.set_org("acme", SEMANTIC_SEARCH_FLAG, True)
    assert orgs() == (["acme"], 1)
    history.flags.set_global(SEMANTIC_SEARCH_FLAG, GlobalState.ON)
    assert orgs() == (["acme", "initech"], 2)


def test_the_backlog_names_the_longest_waiting_orgs_and_counts_the_others_by_age(
    history: HistoryAdapters,
) -> None:
    ingest(history, "acme", "C1", "C2")
    two_hours_ago = datetime.now(UTC) - timedelta(hours=2)
    assert history.schedule.register(MODEL, two_hours_ago)  # acme's work waits since then
    first = datetime.now(UTC)
    ingest(history, "globex", "C1")
    ingest(history, "initech", "C1")
    now = soon()
    backlog = history.schedule.backlog(
        BacklogQuery(MODEL, now, 1, (), age_buckets=(600.0, 86_400.0))
    )
    assert (backlog.partitions, backlog.orgs, backlog.oldest_since) == (4, 3, two_hours_ago)
    assert backlog.longest == (OrgWaiting("acme", 2, two_hours_ago),)
    assert backlog.others_since is not None and first <= backlog.others_since <= now
    assert backlog.orgs_by_age == ((600.0, 2), (86_400.0, 3))
    one = history.schedule.backlog(BacklogQuery(MODEL, now, 5, (), org_id="globex"))
    assert (one.partitions, one.orgs, [w.org_id for w in one.longest]) == (1, 1, ["globex"])


def test_a_forgotten_model_has_no_work_left_and_registers_anew(
    history: HistoryAdapters,
) -> None:
    ingest(history, "acme", "C1", "C2")
    assert history.schedule.register(MODEL, datetime.now(UTC))
    outcomes = [VisitOutcome(v.partition, v.changes, None, 0) for v in due(history)]
    history.schedule.finish(MODEL, outcomes, soon())
    assert due(history) == [] and history.schedule.pending_windows("acme", MODEL) == 0
    history.schedule.forget(MODEL)
    # As before its first registration: every partition waits, one window each at least.
    assert history.schedule.pending_windows("acme", MODEL) == 2
    assert backlog_of(history).partitions == 2
    assert due(history) == []
    assert history.schedule.register(MODEL, datetime.now(UTC))
    assert [v.partition for v in due(history)] == [p("acme", "C1"), p("acme", "C2")]
