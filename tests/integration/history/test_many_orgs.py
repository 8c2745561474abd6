"""Issue 16 item 7 at its size: 1,000 orgs of 10 channels each, and the properties that hold
for one org hold among them: a pass with nothing new reads no partition's messages and
issues as many statements as among 10 orgs, a search issues as many statements as among 10
orgs, and a new org's first closed window is embedded within two slices of a pass while
another org's backlog fills every slice (docs/adr/0090, 0116).

The 1,000 orgs are ingested through the ingest use case (one batch of 10 channels per org,
marking their work as any ingest does). Their work is then left as a pass that caught up
leaves it (no partition due, no tail open) by one statement, instead of sweeping 10,000
windows, which takes most of a minute on this machine: an idle pass, a search and the due
selection read the due work and the searched org's rows, and those are what a real sweep
leaves. The first test sweeps its first 10 orgs for real and compares against them.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import pytest
from tests.fakes import FakeModel

from memory.application.history.ports import DueQuery, DueVisit
from memory.application.history.sweep import SLICE_WINDOWS
from memory.domain.history.search import HistoryQuery, SemanticState
from memory.entrypoints.history_runtime import HistoryRuntime

pytestmark = pytest.mark.long(seconds=40)

ORGS = 1000
CHANNELS = 10
# The orgs swept for real, and compared against: every property is asked of 10 orgs first.
FEW = 10


def org_name(o: int) -> str:
    return f"org{o:04d}"


def ingest_orgs(kit, runtime: HistoryRuntime, orgs: range) -> None:
    """One closed window in each of the orgs' channels, one ingest per org."""
    for o in orgs:
        org = org_name(o)
        runtime.service.ingest(
            org,
            [
                kit.message(
                    f"{org}-{c}", c, f"a question about order {c} of {org}", channel=f"C{c}"
                )
                for c in range(CHANNELS)
            ],
        )


def caught_up(kit) -> int:
    """Leave every partition's work as a pass that embedded all of its windows leaves it:
    not due, nothing waiting, no open tail. The number of work rows changed."""
    with kit.database.connection() as conn:
        return conn.execute(
            "UPDATE dw_sweep_work SET due_at = NULL, waiting_since = NULL, pending_windows = 0"
            " WHERE due_at IS NOT NULL"
        ).rowcount


def idle_pass(kit, runtime: HistoryRuntime, monkeypatch) -> list[str]:
    """The statements of a pass with nothing new, as the sweep worker runs one."""
    with kit.counted_statements(monkeypatch) as seen:
        report = runtime.service.sweep(trigger="interval", wait_for_locks=False)
    assert (report.partitions, report.slices, report.windows_embedded) == (0, 0, 0)
    return list(seen)


def search_statements(kit, runtime: HistoryRuntime, monkeypatch) -> list[str]:
    query = HistoryQuery("a question about order 3", limit=10)
    runtime.service.search(org_name(0), query)  # warm: first-use work is not the search's
    with kit.counted_statements(monkeypatch) as seen:
        result = runtime.service.search(org_name(0), query)
    assert result.semantic is SemanticState.ON
    assert {h.event_id for h in result.hits} >= {f"{org_name(0)}-3"}
    return list(seen)


def test_among_1000_orgs_an_idle_pass_and_a_search_cost_what_they_cost_among_10(
    make_runtime, kit, monkeypatch
) -> None:
    # A loaded machine must not make the query's embedding late (a degraded search issues
    # other statements): what is counted is the statements, not the time.
    runtime: HistoryRuntime = make_runtime(
        FakeModel(dimensions=1024), history_query_embed_timeout=60.0
    )
    kit.enable_semantic(runtime)
    ingest_orgs(kit, runtime, range(FEW))
    assert runtime.service.sweep(trigger="t").windows_embedded == FEW * CHANNELS
    few_idle = idle_pass(kit, runtime, monkeypatch)
    few_search = search_statements(kit, runtime, monkeypatch)

    ingest_orgs(kit, runtime, range(FEW, ORGS))
    assert caught_up(kit) == (ORGS - FEW) * CHANNELS
    assert kit.scalar("SELECT count(*) FROM dw_sweep_work") == ORGS * CHANNELS
    many_idle = idle_pass(kit, runtime, monkeypatch)
    many_search = search_statements(kit, runtime, monkeypatch)

    # The same statements (global flags, model registered, due selection, backlog), none
    # of them reading a message: before docs/adr/0089 a pass visited all 10,000 partitions.
    assert many_idle == few_idle and len(many_idle) <= 6
    assert not [s for s in many_idle if "dw_chat_events" in s]
    # Org, flags and pending windows; full text; KNN with the matched messages (docs/adr/0117,
    # 0155).
    assert many_search == few_search and len(many_search) == 3


class SliceCounter:
    """The runtime's sweep schedule, numbering the slices a pass takes (each slice selects
    its due partitions once)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.slices = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def due(self, query: DueQuery) -> list[DueVisit]:
        found: list[DueVisit] = self._inner.due(query)
        if found:
            self.slices += 1
        return found


@dataclass
class Watch:
    """What the model saw, by slice: the windows each slice embedded, and when the newcomer
    arrived and was embedded."""

    schedule: SliceCounter
    stop: threading.Event = field(default_factory=threading.Event)
    windows_by_slice: dict[int, int] = field(default_factory=dict)
    arrived_in: int | None = None
    embedded_in: int | None = None


NEWCOMER_TEXT = "hello, where is the parcel I ordered last week?"


def test_among_1000_orgs_a_new_orgs_first_window_waits_two_slices_of_a_backlog_at_most(
    make_runtime, kit, clock
) -> None:
    """The guarantee, in slices: a window that becomes due while slice k runs is embedded by
    slice k + 1 at the latest, whatever another org's backlog, because slice k + 1 takes
    every org's longest-due partition first (round-robin turns, docs/adr/0090) and consumes
    at most `SLICE_WINDOWS` windows (docs/adr/0116). In time: the worker starts a pass at
    most one `sweep_interval` after the last (sooner when an ingest wakes it), and a pass
    takes slice after slice, so the wait is at most two slices, and so within two sweep
    intervals while one slice (up to `SLICE_WINDOWS` windows through the model) takes no
    longer than the interval. It holds while fewer than `SLICE_PARTITIONS` other orgs are
    due ahead of the newcomer at its turn (each org due at once takes one place per slice).
    The sweep here is configured as the service configures it."""
    model = FakeModel(dimensions=1024)
    runtime: HistoryRuntime = make_runtime(model)
    kit.enable_semantic(runtime)
    ingest_orgs(kit, runtime, range(ORGS))
    runtime.schedule.register(runtime.service.model_id, clock())
    caught_up(kit)

    # The backlog: 100 channels of 45 windows, more than two slices' worth, all closed.
    clock.advance(days=3)
    backlog = [
        kit.message(
            f"big-{c}-{w}", 2000 + w * 31, f"backlog item {w} of channel {c}", channel=f"B{c}"
        )
        for c in range(100)
        for w in range(45)
    ]
    for i in range(0, len(backlog), 1000):
        runtime.service.ingest("backlog", backlog[i : i + 1000])

    watch = Watch(SliceCounter(runtime.schedule))

    def on_call(call: int) -> None:
        if watch.embedded_in is not None:
            watch.stop.set()  # seen: the rest of the backlog is not this test's
        texts = model.document_calls[call - 1]
        slice_ = watch.schedule.slices
        watch.windows_by_slice[slice_] = watch.windows_by_slice.get(slice_, 0) + len(texts)
        if any(NEWCOMER_TEXT in t for t in texts):
            watch.embedded_in = slice_
        if call == 3:  # during the first slice's model calls, a new org ingests
            minute = (clock() - kit.T0).total_seconds() / 60 - 90
            runtime.service.ingest("newcomer", [kit.message("n1", minute, NEWCOMER_TEXT)])
            watch.arrived_in = slice_

    model.on_document_call = on_call
    kit.sweeper(runtime, schedule=watch.schedule).run_pass(stop=watch.stop)

    assert watch.arrived_in == 1
    assert watch.embedded_in is not None and watch.embedded_in <= watch.arrived_in + 1
    # Each slice's windows are bounded (the time of a slice is what the relation to the
    # interval rests on), and the first slice was a full one of the backlog's.
    assert watch.windows_by_slice[1] == SLICE_WINDOWS
    assert max(watch.windows_by_slice.values()) <= SLICE_WINDOWS
    # Embedded early in its slice, long before the backlog's 4,500 windows were done.
    assert sum(watch.windows_by_slice.values()) < 2 * SLICE_WINDOWS < len(backlog)
