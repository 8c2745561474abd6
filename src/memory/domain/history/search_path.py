"""Which path history search's semantic leg takes for one org (docs/adr/0134).

Small orgs keep the exact scan: it is exact and cheap. Past `INDEX_THRESHOLD_WINDOWS`
windows of one model, an org's windows get a partial HNSW index of their own and its
searches walk that index (with the relevance distribution estimated from a fixed sample).
An operator can force either path for every org (`MEMORY_HISTORY_SEARCH_MODE`).
"""

from __future__ import annotations

from enum import StrEnum

# Above this many windows of one model, an exact scan (with the relevance statistics over
# every window) costs more than the index walk plus the sample (measured in
# bench/large_orgs.py: docs/adr/0134).
INDEX_THRESHOLD_WINDOWS = 5_000


class HistorySearchMode(StrEnum):
    """`auto`: the index once an org passes the threshold; `exact`: never an index (and
    none is built); `approximate`: an index for every org that is searched."""

    AUTO = "auto"
    EXACT = "exact"
    APPROXIMATE = "approximate"


def wants_index(mode: HistorySearchMode, windows: int) -> bool:
    """Whether an org whose search saw `windows` windows of the model should have an index."""
    if mode is HistorySearchMode.EXACT or windows <= 0:
        return False
    return mode is HistorySearchMode.APPROXIMATE or windows >= INDEX_THRESHOLD_WINDOWS


def uses_index(mode: HistorySearchMode, index_ready: bool) -> bool:
    """The index path needs a finished index; until then (or when forced exact) the exact
    scan answers, so a search never waits for a build."""
    return index_ready and mode is not HistorySearchMode.EXACT
