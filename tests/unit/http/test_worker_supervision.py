"""The supervisor of background workers: a crash during a database outage does not leave
the worker in a long back-off after the outage ends."""

from __future__ import annotations

import logging
import time
from typing import Any, cast

import anyio
import psycopg
import pytest

from memory.application.errors import DatabaseUnavailable
from memory.entrypoints.workers.supervisor import DATABASE_PROBE_SECONDS, supervised
from memory.infrastructure.postgres.database import Database

# Longer than the first back-offs (1 + 2 s): before, the next restart came 7 s after the
# crash, 3.5 s after the database returned.
OUTAGE_SECONDS = 3.5


class FlakyDatabase:
    """The edge: a database that is down until told otherwise."""

    def __init__(self) -> None:
        self.down = True

    def ping(self, *, timeout: float | None = None) -> None:
        if self.down:
            raise DatabaseUnavailable("the database is unavailable; retry later")


@pytest.mark.slow
def test_a_worker_stopped_by_an_outage_restarts_soon_after_the_database_returns() -> None:
    database = FlakyDatabase()
    starts: list[float] = []

    async def worker() -> None:
        starts.append(time.monotonic())
        if database.down:
            raise RuntimeError("projector failed: server closed the connection unexpectedly")
        await anyio.sleep_forever()

    async def scenario() -> float:
        async with anyio.create_task_group() as tg:
            tg.start_soon(supervised, "policy", worker, cast(Database, database))
            await anyio.sleep(OUTAGE_SECONDS)
            database.down = False
            back = time.monotonic()
            with anyio.fail_after(10):
                while not starts or starts[-1] < back:
                    await anyio.sleep(0.05)
            tg.cancel_scope.cancel()
        return starts[-1] - back

    restarted_after = anyio.run(scenario)
    assert restarted_after < 2 * DATABASE_PROBE_SECONDS
    assert len(starts) == 2, "no restarts while the database was down"


@pytest.mark.slow
def test_a_worker_that_crashes_with_the_database_up_backs_off() -> None:
    database = FlakyDatabase()
    database.down = False
    starts: list[Any] = []

    async def worker() -> None:
        starts.append(time.monotonic())
        raise RuntimeError("a bug")

    async def scenario() -> None:
        with anyio.move_on_after(2.5):
            await supervised("history", worker, cast(Database, database))

    anyio.run(scenario)
    # Restarts after 1 s, then 2 s: three starts within 2.5 s would mean no back-off.
    assert len(starts) == 2


def test_a_worker_whose_connection_was_cut_restarts_at_once_without_a_stack_trace(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The database restarted (or PgBouncer lost its server) and answers again before the
    supervisor's probe: the crash is still an outage, not a bug in the worker."""
    database = FlakyDatabase()
    database.down = False
    starts: list[float] = []

    async def worker() -> None:
        starts.append(time.monotonic())
        if len(starts) == 1:
            raise psycopg.OperationalError("server closed the connection unexpectedly")
        await anyio.sleep_forever()

    async def scenario() -> None:
        with anyio.move_on_after(0.5):
            await supervised("policy", worker, cast(Database, database))

    with caplog.at_level(logging.INFO, logger="memory.entrypoints.workers.supervisor"):
        anyio.run(scenario)
    assert len(starts) == 2, "restarted without the back-off meant for bugs"
    records = [r for r in caplog.records if r.name == "memory.entrypoints.workers.supervisor"]
    assert [r.levelno for r in records] == [logging.WARNING]
    assert records[0].exc_info is None
    assert "connection lost" in records[0].getMessage()
