"""Stores this replica's activity tallies (docs/adr/0122) every `ACTIVITY_FLUSH_SECONDS`:
one statement off the event loop, however many searches ended meanwhile. A flush that
fails keeps its tallies for the next one; the last flush runs when the runtime closes."""

from __future__ import annotations

import logging

import anyio

from memory.application.history.activity import HistoryActivity

log = logging.getLogger(__name__)

# How stale another replica's figures can be in a trend; one write per interval per replica.
ACTIVITY_FLUSH_SECONDS = 5.0


class ActivityFlusher:
    def __init__(self, activity: HistoryActivity, interval: float = ACTIVITY_FLUSH_SECONDS) -> None:
        self._activity = activity
        self._interval = interval

    async def run(self) -> None:
        while True:
            await anyio.sleep(self._interval)
            await anyio.to_thread.run_sync(self.flush, abandon_on_cancel=True)

    def flush(self) -> None:
        try:
            self._activity.flush()
        except Exception as exc:  # the database's outage is /healthz's; retried next time
            log.warning("activity flush failed: %s", type(exc).__name__)
