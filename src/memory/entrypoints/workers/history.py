"""The history context's background workers: the sweep loop (a pass every `sweep_interval`,
and `sweep_debounce` after an ingest NOTIFY wakes it, through the ingest listener) and the
retention purge loop. Both run their passes through `HistoryService`, in a worker thread."""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from typing import TypeVar

import anyio

from memory.application.history.retention import PurgeReport
from memory.application.history.service import HistoryService
from memory.application.history.sweep import SweepReport
from memory.entrypoints.runtime import Worker
from memory.infrastructure.history.ingest_listener import listen_for_ingest

log = logging.getLogger(__name__)

# After the ingest listener's connection fails, wait this long before reconnecting (a refused
# connection costs nothing, and the sweep should resume soon after the database returns).
# Each time it starts listening, one pass sweeps whatever was ingested while it could not
# hear (before a start, a crash, or during an outage).
LISTENER_RETRY_SECONDS = 1.0

T = TypeVar("T")


class ListenerRole:
    """This replica's ingest listener (docs/adr/0062)."""

    LEADER = "leader"  # listens: ingest notifications wake this replica's sweeper
    STANDBY = "standby"  # another replica listens; this one takes over if it stops
    DISCONNECTED = "disconnected"  # not connected (starting, or the database is away)


class HistoryWorkers:
    def __init__(
        self,
        service: HistoryService,
        database_url: str,
        *,
        connect_seconds: float,
        sweep_interval: float,
        sweep_debounce: float,
        purge_interval: float,
    ) -> None:
        self._service = service
        self._database_url = database_url
        self._connect_seconds = connect_seconds
        self._sweep_interval = sweep_interval
        self._sweep_debounce = sweep_debounce
        self._purge_interval = purge_interval
        # Set on shutdown: a background pass stops between batches.
        self._stop = threading.Event()
        # Held by a background pass while it runs, so shutdown can wait for it.
        self._background = threading.Lock()
        self._wake: anyio.Event | None = None
        self.listener_role = ListenerRole.DISCONNECTED

    def activity(self) -> dict[str, object]:
        """Whether this replica's listener is the one ingests wake, and whether a
        background pass runs now."""
        return {
            "ingest_listener": self.listener_role,
            "background_pass_running": self._background.locked(),
        }

    def workers(self) -> list[Worker]:
        return [self.run_sweep_worker, self.run_purge_worker]

    async def run_sweep_worker(self) -> None:
        """A pass every `sweep_interval`, and `sweep_debounce` after an ingest NOTIFY."""
        async with anyio.create_task_group() as tg:
            self._wake = anyio.Event()
            tg.start_soon(self._listen)
            while True:
                woken = False
                with anyio.move_on_after(self._sweep_interval):
                    await self._wake.wait()
                    woken = True
                if woken:
                    await anyio.sleep(self._sweep_debounce)
                # A NOTIFY during the pass wakes the next one.
                self._wake = anyio.Event()
                trigger = "notify" if woken else "interval"
                await self._in_background(functools.partial(self._sweep, trigger))

    async def run_purge_worker(self) -> None:
        while True:
            await self._in_background(self._purge)
            await anyio.sleep(self._purge_interval)

    def _sweep(self, trigger: str) -> SweepReport:
        return self._service.sweep(trigger=trigger, wait_for_locks=False)

    def _purge(self) -> PurgeReport:
        return self._service.purge()

    async def _listen(self) -> None:
        failures = 0

        def on_listening() -> None:
            nonlocal failures
            failures = 0
            self.listener_role = ListenerRole.LEADER
            self._on_listening()

        def on_standby() -> None:
            nonlocal failures
            failures = 0
            self.listener_role = ListenerRole.STANDBY

        while True:
            try:
                await listen_for_ingest(
                    self._database_url,
                    self._on_ingest,
                    on_listening=on_listening,
                    on_standby=on_standby,
                    connect_seconds=self._connect_seconds,
                )
            except Exception as exc:  # a lost connection must not end the sweep worker
                self.listener_role = ListenerRole.DISCONNECTED
                failures += 1
                reason = str(exc).strip().splitlines()[0] if str(exc).strip() else exc
                # Once per outage, not once a second.
                level = logging.WARNING if failures == 1 else logging.DEBUG
                log.log(level, "history ingest listener failed (%s); reconnecting", reason)
            await anyio.sleep(LISTENER_RETRY_SECONDS)

    def _on_listening(self) -> None:
        if self._wake is not None:
            self._wake.set()

    def _on_ingest(self, org_id: str) -> None:
        if self._wake is not None:
            self._wake.set()

    async def _in_background(self, work: Callable[[], T]) -> T | None:
        """Run blocking work in a thread. On cancellation (shutdown), ask it to stop and
        wait for it, so that nothing runs on a closed pool."""

        def guarded() -> T | None:
            with self._background:
                if self._stop.is_set():
                    return None
                return work()

        try:
            return await anyio.to_thread.run_sync(guarded, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            self._stop.set()
            self._service.stop_sweeps()
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self.wait_for_background)
            raise

    def stop(self) -> None:
        """Ask a running background pass to stop, and wait until it has."""
        self._stop.set()
        self._service.stop_sweeps()
        self.wait_for_background()

    def wait_for_background(self) -> None:
        with self._background:
            pass
