"""The history context's index builder (docs/adr/0134): builds the per-org search indexes
that searches asked for, one at a time, in a worker thread, and drops those whose orgs
shrank (docs/adr/0141); looks again every `INDEX_BUILD_POLL_SECONDS` when nothing waits.
Several replicas may run it: each request is built by whichever replica locks it first. A
build that fails with the database up is recorded and tried again later; when the database
went away the worker ends, its supervisor restarts it, and the request is built again.

Beside the builds, it merges the orgs' tails into their indexes (docs/adr/0153: the sweep
writes a large org's new windows outside its graph), a batch at a time, looking again every
`MERGE_POLL_SECONDS` when no tail waits; and it reads the indexes' summary every
`INDEX_REPORT_SECONDS` through the service, so that the metrics
(memory_history_search_indexes, ..._build_progress) follow a build while it runs, whether or
not anything probes /healthz."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import anyio

from memory.application.errors import ServiceUnavailable
from memory.infrastructure.history.search_indexes import MERGE_BATCH, PostgresWindowIndexes

log = logging.getLogger(__name__)

# How often an idle builder looks for wanted indexes. An org that passed the threshold is
# searched exactly until its index is ready, so a minute late costs only speed.
INDEX_BUILD_POLL_SECONDS = 60.0
# How often an idle merger looks for windows waiting in the orgs' tails: each waits at most
# about this long plus the windows ahead of it (searches scan it exactly meanwhile).
MERGE_POLL_SECONDS = 1.0
# How often the indexes' summary is read for the metrics (one small statement).
INDEX_REPORT_SECONDS = 10.0


class WindowIndexBuilder:
    def __init__(
        self,
        indexes: PostgresWindowIndexes,
        *,
        report: Callable[[], object] | None = None,
        poll_seconds: float = INDEX_BUILD_POLL_SECONDS,
        report_seconds: float = INDEX_REPORT_SECONDS,
        merge_poll_seconds: float = MERGE_POLL_SECONDS,
    ) -> None:
        """`report`: reads the summary through the service (its observers set the gauges)."""
        self._indexes = indexes
        self._report = report
        self._poll_seconds = poll_seconds
        self._report_seconds = report_seconds
        self._merge_poll_seconds = merge_poll_seconds
        # Set on shutdown: a build between two group indexes stops there.
        self.stop = threading.Event()

    async def run(self) -> None:
        async with anyio.create_task_group() as tasks:
            if self._report is not None:
                tasks.start_soon(self._report_loop, self._report)
            tasks.start_soon(self._merge_loop)
            await self._build_loop()
            tasks.cancel_scope.cancel()

    async def _build_loop(self) -> None:
        while not self.stop.is_set():
            built = await anyio.to_thread.run_sync(self._build_one, abandon_on_cancel=True)
            if not built:
                await anyio.sleep(self._poll_seconds)

    async def _merge_loop(self) -> None:
        while not self.stop.is_set():
            merged = await anyio.to_thread.run_sync(self._merge_one, abandon_on_cancel=True)
            if not merged:
                await anyio.sleep(self._merge_poll_seconds)

    def _merge_one(self) -> bool:
        """Whether a full batch was merged (more may wait)."""
        return self._indexes.merge_pending() >= MERGE_BATCH

    async def _report_loop(self, report: Callable[[], object]) -> None:
        while not self.stop.is_set():
            try:
                await anyio.to_thread.run_sync(report, abandon_on_cancel=True)
            except ServiceUnavailable as exc:  # the builder's own failure says more
                log.debug("search index summary unavailable: %s", exc)
            await anyio.sleep(self._report_seconds)

    def _build_one(self) -> bool:
        return self._indexes.build_next(self.stop) is not None
