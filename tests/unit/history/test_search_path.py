"""Which path the semantic leg takes per org (docs/adr/0134): an index past the threshold in
`auto`, for every searched org in `approximate`, never in `exact`; the index is used only
once it is ready; an org that shrinks keeps its index down to half the threshold."""

from __future__ import annotations

import pytest

from memory.domain.history.search_path import (
    INDEX_THRESHOLD_WINDOWS,
    HistorySearchMode,
    drop_line,
    keeps_index,
    uses_index,
    wants_index,
)
from memory.infrastructure.settings import Settings


def test_auto_asks_for_an_index_from_the_threshold_on() -> None:
    assert not wants_index(HistorySearchMode.AUTO, INDEX_THRESHOLD_WINDOWS - 1)
    assert wants_index(HistorySearchMode.AUTO, INDEX_THRESHOLD_WINDOWS)


def test_approximate_asks_for_an_index_for_any_org_with_windows() -> None:
    assert wants_index(HistorySearchMode.APPROXIMATE, 1)
    assert not wants_index(HistorySearchMode.APPROXIMATE, 0)


def test_exact_never_asks_for_an_index_nor_uses_one() -> None:
    assert not wants_index(HistorySearchMode.EXACT, 10 * INDEX_THRESHOLD_WINDOWS)
    assert not uses_index(HistorySearchMode.EXACT, index_ready=True)


@pytest.mark.parametrize("mode", [HistorySearchMode.AUTO, HistorySearchMode.APPROXIMATE])
def test_an_index_serves_searches_only_once_it_is_ready(mode: HistorySearchMode) -> None:
    assert uses_index(mode, index_ready=True)
    assert not uses_index(mode, index_ready=False)


@pytest.mark.parametrize("mode", [HistorySearchMode.AUTO, HistorySearchMode.EXACT])
def test_a_shrinking_org_keeps_its_index_down_to_half_the_threshold(
    mode: HistorySearchMode,
) -> None:
    half = INDEX_THRESHOLD_WINDOWS // 2
    assert keeps_index(mode, INDEX_THRESHOLD_WINDOWS - 1), "no drop just below the threshold"
    assert keeps_index(mode, half)
    assert not keeps_index(mode, half - 1)
    assert drop_line(mode) == half, "a count of the org's windows may stop at the line"


def test_approximate_keeps_an_index_while_the_org_has_windows() -> None:
    assert keeps_index(HistorySearchMode.APPROXIMATE, 1)
    assert not keeps_index(HistorySearchMode.APPROXIMATE, 0)
    assert drop_line(HistorySearchMode.APPROXIMATE) == 1


def test_the_mode_is_a_setting_and_a_mistyped_one_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MEMORY_HISTORY_SEARCH_MODE", "exact")
    assert Settings().history_search_mode is HistorySearchMode.EXACT
    monkeypatch.setenv("MEMORY_HISTORY_SEARCH_MODE", "fast")
    with pytest.raises(ValueError, match="history_search_mode"):
        Settings()
