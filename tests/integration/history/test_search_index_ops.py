"""Operating history's search indexes (docs/adr/0134, 0141): an org that shrinks below half
the threshold (retention, erasure) has its index dropped, with hysteresis above that; a
build that fails is recorded and tried again later; a model swap's rebuild and its progress
are visible through the service (what the route, the CLI, /healthz and the metrics show)."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import anyio
import pytest
from prometheus_client import REGISTRY
from tests.fakes import TEST_ACTOR, FakeModel

from memory.application.history.search_indexes import SearchIndexStatus
from memory.domain.history import search_path
from memory.domain.history.search import HistoryQuery, MatchedBy
from memory.domain.history.search_path import SearchIndexState
from memory.domain.relevance import ScriptGroup
from memory.entrypoints.history_runtime import HistoryRuntime
from memory.entrypoints.workers.history_indexes import WindowIndexBuilder
from memory.infrastructure.history import search_indexes
from memory.infrastructure.history.search_indexes import group_index_name, index_name

QUERY = "forklift broke delivery late please"
TEXTS = [
    "the forklift in the warehouse broke so the delivery is late today",
    "payroll is late this month, when will salaries be paid",
    "the printer on level three jams whenever we print invoices",
    "who took the blue stapler from the front desk yesterday",
    "the new coffee beans in the pantry taste like chocolate",
]
# Three cohorts of one-window channels, hours apart (so that a retention cutoff between
# them purges the older ones), each of its own sender (so that erasing a sender erases it).
COHORTS = {"old": (0, 30), "middle": (10, 15), "recent": (20, 25)}
# With the threshold at 60 the drop line is 30: 70 windows, then 40 (kept), then 25 (dropped).
THRESHOLD = 60


@pytest.fixture(autouse=True)
def small_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search_path, "INDEX_THRESHOLD_WINDOWS", THRESHOLD)


def seed(runtime: HistoryRuntime, kit: Any, org: str = "acme") -> None:
    events = [
        kit.message(
            f"{cohort}{n}",
            hours * 60,
            f"{TEXTS[n % len(TEXTS)]} {cohort} {n}",
            channel=f"{cohort}-{n}",
            sender=cohort,
        )
        for cohort, (hours, count) in COHORTS.items()
        for n in range(count)
    ]
    kit.swept(runtime, org, events, closing=timedelta(hours=1))  # every window closed


def semantic(runtime: HistoryRuntime, org: str = "acme") -> list[str]:
    result = runtime.service.search(org, HistoryQuery(QUERY, limit=10, min_relevance=0))
    return [h.event_id for h in result.hits if h.matched_by is MatchedBy.SEMANTIC]


def indexed(runtime: HistoryRuntime, org: str = "acme") -> None:
    """A search asks for the org's index; the builder builds it."""
    semantic(runtime, org)
    built = runtime.window_indexes.build_next()
    assert built is not None and built.org_id == org


def states(runtime: HistoryRuntime, org: str = "acme") -> list[tuple[str, SearchIndexState]]:
    return [(i.model, i.state) for i in runtime.service.search_indexes(org).indexes]


def purge_before(runtime: HistoryRuntime, kit: Any, hours: float) -> None:
    """A retention purge whose cutoff is `hours` after the first cohort."""
    runtime.service.set_retention("acme", 1, actor=TEST_ACTOR)
    kit.clock.now = kit.T0 + timedelta(days=1, hours=hours)
    runtime.service.purge("acme")


def test_a_purge_keeps_the_index_above_half_the_threshold_and_drops_it_below(
    make_runtime, kit
) -> None:
    runtime: HistoryRuntime = make_runtime(history_search_mode="auto")
    seed(runtime, kit)
    seed(runtime, kit, org="globex")
    indexed(runtime)
    indexed(runtime, "globex")
    assert [h for h in semantic(runtime) if h.startswith("old")], "the index serves them first"

    purge_before(runtime, kit, hours=5)  # the old cohort goes: 40 windows left
    assert states(runtime) == [("hash:1024", SearchIndexState.READY)]
    assert runtime.window_indexes.ready_dimensions("acme", "hash:1024") == 1024
    hits = semantic(runtime)
    assert hits, "40 windows, under the threshold: the index still serves"
    assert not [h for h in hits if h.startswith("old")], "a purged window never comes back"
    runtime.service.sweep(trigger="t")
    assert semantic(runtime) == hits, "nor does a sweep after the purge bring it back"

    purge_before(runtime, kit, hours=15)  # the middle cohort goes: 25 windows left
    assert states(runtime) == [("hash:1024", SearchIndexState.DROPPING)]
    assert kit.window_index_names() == kit.group_indexes("acme") | kit.group_indexes("globex"), (
        "the builder drops it, not the purge's transaction"
    )
    hits = semantic(runtime)
    assert hits and all(h.startswith("recent") for h in hits)

    assert runtime.window_indexes.build_next() is None, "nothing to build"
    assert states(runtime) == []
    assert kit.window_index_names() == kit.group_indexes("globex"), "another org's index stays"
    assert semantic(runtime) == hits, "the exact scan answers as the index did"
    assert states(runtime) == [], "25 windows do not ask for an index again"


def test_erasing_most_senders_drops_the_index(make_runtime, kit) -> None:
    runtime: HistoryRuntime = make_runtime(history_search_mode="auto")
    seed(runtime, kit)
    indexed(runtime)
    assert [h for h in semantic(runtime) if h.startswith("middle")]
    runtime.service.erase_events("acme", sender="middle", actor=TEST_ACTOR)
    assert states(runtime) == [("hash:1024", SearchIndexState.READY)], "55 windows left"
    assert runtime.window_indexes.ready_dimensions("acme", "hash:1024") == 1024
    hits = semantic(runtime)
    assert hits and not [h for h in hits if h.startswith("middle")], (
        "an erased sender's windows never come back through the index"
    )
    runtime.service.erase_events("acme", sender="old", actor=TEST_ACTOR)
    assert states(runtime) == [("hash:1024", SearchIndexState.DROPPING)], "25 windows left"
    runtime.window_indexes.build_next()
    assert states(runtime) == [] and kit.window_index_names() == set()
    assert not {h for h in semantic(runtime) if not h.startswith("recent")}


def test_approximate_mode_keeps_an_index_while_the_org_has_windows(make_runtime, kit) -> None:
    runtime: HistoryRuntime = make_runtime(history_search_mode="approximate")
    seed(runtime, kit)
    indexed(runtime)
    purge_before(runtime, kit, hours=15)
    assert states(runtime) == [("hash:1024", SearchIndexState.READY)], "25 windows"
    purge_before(runtime, kit, hours=25)
    assert states(runtime) == [("hash:1024", SearchIndexState.DROPPING)], "none left"


def test_an_org_that_grows_back_past_the_threshold_asks_again(make_runtime, kit) -> None:
    runtime: HistoryRuntime = make_runtime(history_search_mode="auto")
    seed(runtime, kit)
    indexed(runtime)
    runtime.service.erase_events("acme", sender="old", actor=TEST_ACTOR)
    runtime.service.erase_events("acme", sender="middle", actor=TEST_ACTOR)
    runtime.window_indexes.build_next()
    assert states(runtime) == []
    events = [
        kit.message(f"new{n}", 30 * 60, f"{TEXTS[n % 5]} again {n}", channel=f"new-{n}")
        for n in range(40)
    ]
    kit.clock.now = kit.T0 + timedelta(days=2)
    runtime.service.ingest("acme", events)
    runtime.service.sweep(trigger="t")
    semantic(runtime)
    assert states(runtime) == [("hash:1024", SearchIndexState.WANTED)], "65 windows"


def test_a_failed_build_is_recorded_shown_and_tried_again_later(make_runtime, kit) -> None:
    runtime: HistoryRuntime = make_runtime(history_search_mode="auto")
    seed(runtime, kit)
    semantic(runtime)
    # A table under one group index's name: the build cannot make (nor drop) that index.
    squatter = group_index_name(index_name("acme", "hash:1024"), ScriptGroup.MALAY)
    with kit.database.connection() as conn:
        conn.execute(f"CREATE TABLE {squatter} (x int)")
    assert runtime.window_indexes.build_next() is None
    [failed] = runtime.service.search_indexes("acme").indexes
    assert (failed.state, failed.failures) == (SearchIndexState.FAILED, 1)
    assert failed.last_error == "WrongObjectType (42809)" and failed.failed_at is not None
    summary = runtime.service.search_index_summary()
    assert summary.count(SearchIndexState.FAILED) == 1 and summary.queue == [failed]
    assert runtime.health()["search_indexes"]["failed"] == 1
    assert semantic(runtime), "searches stay exact meanwhile"

    with kit.database.connection() as conn:
        conn.execute(f"DROP TABLE {squatter}")
    assert runtime.window_indexes.build_next() is None, "not again before the retry delay"
    with kit.database.connection() as conn:
        conn.execute(
            "UPDATE dw_window_indexes SET failed_at = now() - make_interval(secs => %s)",
            (search_indexes.FAILED_RETRY_SECONDS + 1,),
        )
    assert runtime.window_indexes.build_next() is not None
    [ready] = runtime.service.search_indexes("acme").indexes
    assert (ready.state, ready.failures, ready.last_error) == (SearchIndexState.READY, 0, None)


def test_a_model_swaps_rebuild_shows_its_progress_and_the_old_index_is_not_used(
    make_runtime, kit, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search_indexes, "PROGRESS_INTERVAL_SECONDS", 0.05)
    old: HistoryRuntime = make_runtime(
        FakeModel("old:model", dimensions=1024), history_search_mode="auto"
    )
    seed(old, kit)
    indexed(old)
    assert states(old) == [("old:model", SearchIndexState.READY)]

    new: HistoryRuntime = make_runtime(history_search_mode="auto")
    new.service.sweep(trigger="t")  # the swap's rebuild of the windows
    exact: HistoryRuntime = make_runtime(history_search_mode="exact")
    assert semantic(new) == semantic(exact)
    found = new.service.search_indexes("acme")
    assert found.model == "hash:1024"
    assert [(i.model, i.state) for i in found.indexes] == [
        ("hash:1024", SearchIndexState.WANTED),
        ("old:model", SearchIndexState.READY),
    ]
    assert new.window_indexes.ready_dimensions("acme", "hash:1024") is None, (
        "the new model's searches do not use the old model's index"
    )

    # A writer's open transaction holds the build in its first phase, long enough to see it.
    with kit.database.connection() as writer:
        writer.execute("LOCK TABLE dw_message_embeddings IN ROW EXCLUSIVE MODE")
        done = threading.Event()
        builder = threading.Thread(target=lambda: (new.window_indexes.build_next(), done.set()))
        builder.start()
        running = _wait_for(lambda: _building(new))
        assert running.phase == "waiting for writers before build (han, 1 of 3)"
        assert running.progress == 0.0, "no group index built, the table not scanned yet"
        assert running.started_at is not None
        summary = new.service.search_index_summary()
        assert summary.count(SearchIndexState.BUILDING) == 1 and summary.queue[0] == running
        health = new.health()["search_indexes"]
        assert (health["mode"], health["building"], health["ready"]) == ("auto", 1, 1)
        assert health["queue"][0]["phase"] == running.phase
        assert gauge("building") == 1
        assert not done.is_set()
    builder.join(timeout=60)
    assert done.is_set()
    assert states(new) == [
        ("hash:1024", SearchIndexState.READY),
        ("old:model", SearchIndexState.READY),
    ]
    new.service.search_index_summary()
    assert (gauge("building"), gauge("ready")) == (0, 2)
    assert semantic(new) == semantic(exact)

    new.service.drop_model("old:model", actor=TEST_ACTOR)
    assert states(new) == [("hash:1024", SearchIndexState.READY)]
    assert kit.window_index_names() == kit.group_indexes("acme")


def gauge(state: str) -> float | None:
    return REGISTRY.get_sample_value("memory_history_search_indexes", {"state": state})


def _building(runtime: HistoryRuntime) -> SearchIndexStatus | None:
    for status in runtime.service.search_indexes("acme").indexes:
        if status.state is SearchIndexState.BUILDING and status.phase is not None:
            return status
    return None


def _wait_for(read: Any) -> Any:
    async def poll() -> Any:
        with anyio.fail_after(60):
            while (found := read()) is None:
                await anyio.sleep(0.05)
        return found

    return anyio.run(poll)


def test_the_builder_worker_keeps_the_gauges_up_to_date(make_runtime, kit) -> None:
    runtime: HistoryRuntime = make_runtime(history_search_mode="auto")
    seed(runtime, kit)
    semantic(runtime)
    runtime.service.search_index_summary()
    assert (gauge("wanted"), gauge("ready")) == (1, 0)
    builder = WindowIndexBuilder(
        runtime.window_indexes,
        report=runtime.service.search_index_summary,
        poll_seconds=0.05,
        report_seconds=0.05,
    )

    async def main() -> None:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(builder.run)
            with anyio.fail_after(60):
                while (gauge("wanted"), gauge("ready")) != (0, 1):
                    await anyio.sleep(0.05)
            builder.stop.set()
            tasks.cancel_scope.cancel()

    anyio.run(main)
    assert states(runtime) == [("hash:1024", SearchIndexState.READY)]
