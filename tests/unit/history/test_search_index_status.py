"""What an operator reads of an index (docs/adr/0141): the share of a build done shows only
while it runs, within 0..1."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from memory.application.history.search_indexes import SearchIndexStatus, SearchIndexSummary
from memory.domain.history.search_path import SearchIndexState

BUILDING = SearchIndexStatus(
    org_id="acme",
    model="hash:1024",
    state=SearchIndexState.BUILDING,
    dimensions=1024,
    windows_seen=6000,
    requested_at=datetime(2026, 12, 2, tzinfo=UTC),
    started_at=datetime(2026, 12, 2, tzinfo=UTC),
    ready_at=None,
    phase="building index: loading tuples (other, 3 of 3)",
    tuples_done=1200,
    tuples_total=None,
    share_done=0.75,
    failures=0,
    last_error=None,
    failed_at=None,
)


def test_a_running_build_shows_its_share_done() -> None:
    assert BUILDING.progress == 0.75
    assert replace(BUILDING, share_done=1.2).progress == 1.0
    assert replace(BUILDING, share_done=None).progress is None, "not copied yet"


def test_an_index_not_building_shows_no_progress() -> None:
    for state in (SearchIndexState.READY, SearchIndexState.WANTED, SearchIndexState.FAILED):
        assert replace(BUILDING, state=state).progress is None


def test_a_summary_counts_a_state_it_has_not_seen_as_none() -> None:
    summary = SearchIndexSummary({SearchIndexState.READY: 3}, [])
    assert summary.count(SearchIndexState.READY) == 3
    assert summary.count(SearchIndexState.FAILED) == 0
