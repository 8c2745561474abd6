"""The history context's index builder (docs/adr/0134): builds the per-org search indexes
that searches asked for, one at a time, in a worker thread; looks again every
`INDEX_BUILD_POLL_SECONDS` when none is wanted. Several replicas may run it: each request is
built by whichever replica locks it first. A failed build (the database went away) ends
the worker; its supervisor restarts it, and the request is built again."""

from __future__ import annotations

import threading

import anyio

from memory.infrastructure.history.search_indexes import PostgresWindowIndexes

# How often an idle builder looks for wanted indexes. An org that passed the threshold is
# searched exactly until its index is ready, so a minute late costs only speed.
INDEX_BUILD_POLL_SECONDS = 60.0


class WindowIndexBuilder:
    def __init__(
        self, indexes: PostgresWindowIndexes, *, poll_seconds: float = INDEX_BUILD_POLL_SECONDS
    ) -> None:
        self._indexes = indexes
        self._poll_seconds = poll_seconds
        # Set on shutdown: a build between two group indexes stops there.
        self.stop = threading.Event()

    async def run(self) -> None:
        while not self.stop.is_set():
            built = await anyio.to_thread.run_sync(self._build_one, abandon_on_cancel=True)
            if not built:
                await anyio.sleep(self._poll_seconds)

    def _build_one(self) -> bool:
        return self._indexes.build_next(self.stop) is not None
