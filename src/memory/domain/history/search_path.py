"""Which path history search's semantic leg takes for one org (docs/adr/0134).

Small orgs keep the exact scan: it is exact and cheap. Past `INDEX_THRESHOLD_WINDOWS`
windows of one model, an org's windows get a partial HNSW index of their own and its
searches walk that index (with the relevance distribution estimated from a fixed sample).
An operator can force either path for every org (`MEMORY_HISTORY_SEARCH_MODE`). An org
that shrinks (retention, erasure) keeps its index until it falls below half the threshold
(docs/adr/0141).
"""

from __future__ import annotations

from enum import StrEnum

# Above this many windows of one model, an exact scan (with the relevance statistics over
# every window) costs more than the index walk plus the sample (measured in
# bench/large_orgs.py: docs/adr/0134).
INDEX_THRESHOLD_WINDOWS = 5_000
# An index is dropped once its org has fewer than 1/DROP_DIVISOR of the threshold's windows:
# an org that hovers around the threshold (a day's chat in, a day's purge out) neither
# builds nor drops its index every day (docs/adr/0141).
DROP_DIVISOR = 2


class SearchIndexState(StrEnum):
    """Where an org's index for one model is (`dw_window_indexes.state`)."""

    WANTED = "wanted"  # a search asked for it; the builder has not started
    BUILDING = "building"
    READY = "ready"  # searches walk it
    FAILED = "failed"  # the last build failed; tried again later
    DROPPING = "dropping"  # the org shrank: the builder drops it


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


def keeps_index(mode: HistorySearchMode, windows: int) -> bool:
    """Whether an org left with `windows` windows of the model (after a purge or an
    erasure) keeps its index: in `approximate` mode while it has any; otherwise while it has
    at least 1/DROP_DIVISOR of the threshold (hysteresis: `wants_index` asks only from the
    threshold up)."""
    if windows <= 0:
        return False
    if mode is HistorySearchMode.APPROXIMATE:
        return True
    return windows * DROP_DIVISOR >= INDEX_THRESHOLD_WINDOWS


def drop_line(mode: HistorySearchMode) -> int:
    """How many windows `keeps_index` needs to see to keep the index: a count of the org's
    windows can stop there."""
    if mode is HistorySearchMode.APPROXIMATE:
        return 1
    return -(-INDEX_THRESHOLD_WINDOWS // DROP_DIVISOR)
