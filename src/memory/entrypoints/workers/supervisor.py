"""Running the contexts' workers: each under a supervisor that restarts it after a crash,
in whichever event loop the composition root provides (the app's lifespan for
`memory serve`, a background thread's for `memory.api.open(workers=True)`)."""

from __future__ import annotations

import concurrent.futures
import logging
import time
from collections.abc import Sequence

import anyio
from anyio.abc import TaskGroup
from anyio.from_thread import BlockingPortal, start_blocking_portal

from memory.entrypoints.runtime import ContextRuntime, Worker
from memory.entrypoints.workers.database_probe import database_problem
from memory.infrastructure.postgres.availability import is_connection_failure
from memory.infrastructure.postgres.database import Database

log = logging.getLogger(__name__)

# A crashed worker restarts after this, doubling while it keeps crashing, up to the maximum;
# a worker that ran for the maximum before crashing starts again from the first.
WORKER_FIRST_BACKOFF_SECONDS = 1.0
WORKER_MAX_BACKOFF_SECONDS = 60.0
# A worker that crashed while the database is unreachable does not back off: it probes the
# database this often and restarts as soon as it answers.
DATABASE_PROBE_SECONDS = 1.0


async def supervised(name: str, worker: Worker, database: Database) -> None:
    """Keep a background worker alive: log a crash, wait, restart. Cancellation ends it.

    A crash while the database is unreachable, or caused by a lost connection, is an outage,
    not a fault of the worker: it logs one line without a stack trace and restarts as soon as
    the database answers again, so that an outage never leaves the worker in a long back-off
    after it ended."""
    backoff = WORKER_FIRST_BACKOFF_SECONDS
    while True:
        started = time.monotonic()
        try:
            await worker()
            return
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:
            problem = await database_problem(database, DATABASE_PROBE_SECONDS)
            if problem is None and is_connection_failure(exc):
                # The worker's connection was cut (a restart, a failover, PgBouncer losing
                # its server) and the database was back before the probe: still an outage.
                problem = "connection lost"
            if problem is not None:
                log.warning(
                    "%s worker stopped, database %s; restarting when it is back (%s)",
                    name,
                    problem,
                    type(exc).__name__,
                )
                await _until_database_answers(database)
                backoff = WORKER_FIRST_BACKOFF_SECONDS
                continue
            if time.monotonic() - started >= WORKER_MAX_BACKOFF_SECONDS:
                backoff = WORKER_FIRST_BACKOFF_SECONDS
            log.exception("%s worker crashed; restarting in %.0fs", name, backoff)
            await anyio.sleep(backoff)
            backoff = min(backoff * 2, WORKER_MAX_BACKOFF_SECONDS)


async def _until_database_answers(database: Database) -> None:
    while True:
        started = time.monotonic()
        if await database_problem(database, DATABASE_PROBE_SECONDS) is None:
            return
        await anyio.sleep(max(0.0, DATABASE_PROBE_SECONDS - (time.monotonic() - started)))


def start_workers(tg: TaskGroup, contexts: Sequence[ContextRuntime], database: Database) -> None:
    """Start every context's workers, supervised, in `tg` (cancel it to stop them)."""
    for ctx in contexts:
        for worker in ctx.workers():
            tg.start_soon(supervised, ctx.name, worker, database)


class WorkerThread:
    """The contexts' workers on an event loop of their own, in a background thread: for an
    in-process user (a sibling context) that has no event loop of its own to lend."""

    def __init__(self, contexts: Sequence[ContextRuntime], database: Database) -> None:
        self._contexts = list(contexts)
        self._database = database
        self._portal_cm = start_blocking_portal()
        self._portal: BlockingPortal | None = None
        self._running: list[concurrent.futures.Future[None]] = []

    def start(self) -> None:
        self._portal = self._portal_cm.__enter__()
        for ctx in self._contexts:
            for worker in ctx.workers():
                self._running.append(
                    self._portal.start_task_soon(supervised, ctx.name, worker, self._database)
                )

    def stop(self) -> None:
        """Cancel the workers and wait until each has cleaned up (a projector releases its
        lease, a sweep pass stops between batches), then end the thread."""
        if self._portal is None:
            return
        for future in self._running:
            future.cancel()
        self._running.clear()
        self._portal = None
        # Leaving the portal waits for the cancelled tasks to finish their cleanup.
        self._portal_cm.__exit__(None, None, None)
