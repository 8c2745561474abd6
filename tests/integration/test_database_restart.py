"""The service's pool and the event store's pools across a PostgreSQL restart: refused at
once while it is down, and the first call after it is back succeeds, however many pooled
connections died meanwhile."""

from __future__ import annotations

import time

import pytest

from memory.application.errors import DatabaseUnavailable
from memory.infrastructure.policy.event_store import EventSourcedPolicyLog
from memory.infrastructure.postgres.database import Database
from memory.infrastructure.postgres.embedded import EmbeddedPostgres, create_database

POOL_SIZE = 4
WAIT_SECONDS = 1.0
# Generous for a loaded machine: the library alone used to retry ten times, each after
# waiting WAIT_SECONDS for the pool (over 10 s).
ANSWER_BOUND_SECONDS = 5.0


def test_pools_refuse_fast_while_down_and_serve_at_once_after_a_restart(
    cluster: EmbeddedPostgres,
) -> None:
    url = create_database(cluster.url, "restart")
    database = Database(url, min_size=POOL_SIZE, max_size=POOL_SIZE, timeout=WAIT_SECONDS)
    database.open()
    log = EventSourcedPolicyLog.connect(url, wait_seconds=WAIT_SECONDS)
    try:
        # Every pooled connection has been used and is idle when the server goes away.
        connections = [database.pool.getconn() for _ in range(POOL_SIZE)]
        for conn in connections:
            database.pool.putconn(conn)
        assert log.head() is None

        cluster.stop()
        for call in (database.ping, log.head):
            started = time.monotonic()
            with pytest.raises(DatabaseUnavailable):
                call()
            assert time.monotonic() - started < ANSWER_BOUND_SECONDS

        cluster.start()
        # No request fails on a dead connection, and none waits out a reconnect back-off.
        started = time.monotonic()
        with database.connection() as conn:
            assert conn.execute("SELECT 1 AS one").fetchone() == {"one": 1}
        assert log.head() is None
        assert time.monotonic() - started < ANSWER_BOUND_SECONDS
    finally:
        log.close()
        database.close()
