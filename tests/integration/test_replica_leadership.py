"""Leadership between replicas through session advisory locks (docs/adr/0062): the policy
projector's lease and the history ingest listener. A leader's session ending (its
connection dropped, or the process killed) frees the lock; a standby takes over at its next
try, and a standby whose own connection dropped reconnects instead of failing."""

from __future__ import annotations

import anyio
import psycopg
import pytest

from memory.infrastructure.history.ingest_listener import INGEST_CHANNEL, listen_for_ingest
from memory.infrastructure.policy.lease import ProjectionLease
from memory.infrastructure.postgres.availability import is_connection_failure

pytestmark = pytest.mark.anyio

MODEL = "hash:384"
# Standbys in these tests try every 0.1 s; the takeover must happen within a few tries.
RETRY_SECONDS = 0.1
TAKEOVER_DEADLINE_SECONDS = 5.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _terminate_backends(url: str, query_like: str) -> int:
    """pg_terminate_backend every other session whose last query matches: a dropped
    connection as the server sees it."""
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE pid <> pg_backend_pid() AND datname = current_database()"
            " AND query LIKE %s",
            (query_like,),
        ).fetchall()
    return len(rows)


def test_a_standby_takes_the_lease_once_the_leader_s_connection_drops(database_url: str) -> None:
    leader = ProjectionLease(database_url, MODEL)
    standby = ProjectionLease(database_url, MODEL)
    try:
        assert leader.try_acquire()
        assert not standby.try_acquire()
        # Both hold a session; drop the leader's (its last query took the lock, and so did
        # the standby's: terminate only the one that holds it).
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_locks"
                " WHERE locktype = 'advisory' AND granted AND pid <> pg_backend_pid()"
            )
        assert not leader.alive()
        # Why, for the projector to raise its failure from: an outage, not a bug.
        assert is_connection_failure(leader.lost_because)
        assert standby.try_acquire(), "the lock went with the leader's session"
        assert standby.alive()
    finally:
        leader.release()
        standby.release()


def test_a_standby_whose_connection_dropped_reconnects_on_its_next_try(database_url: str) -> None:
    leader = ProjectionLease(database_url, MODEL)
    standby = ProjectionLease(database_url, MODEL)
    try:
        assert leader.try_acquire()
        assert not standby.try_acquire()
        assert _terminate_backends(database_url, "%pg_try_advisory_lock%") == 2
        # Both sessions are gone: the standby's next try reconnects and gets the lock.
        assert standby.try_acquire()
        assert not leader.alive()
    finally:
        leader.release()
        standby.release()


async def test_one_listener_hears_ingests_and_another_takes_over_when_it_stops(
    database_url: str,
) -> None:
    heard: dict[str, list[str]] = {"a": [], "b": []}
    listening: list[str] = []

    async def listener(name: str, scope: anyio.CancelScope) -> None:
        with scope:
            await listen_for_ingest(
                database_url,
                heard[name].append,
                on_listening=lambda: listening.append(name),
                leader_retry_seconds=RETRY_SECONDS,
            )

    async def notify(payload: str) -> None:
        async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
            await conn.execute("SELECT pg_notify(%s, %s)", (INGEST_CHANNEL, payload))

    async def until(condition: object) -> None:
        with anyio.fail_after(TAKEOVER_DEADLINE_SECONDS):
            while not condition():  # type: ignore[operator]
                await anyio.sleep(0.05)

    scopes = {"a": anyio.CancelScope(), "b": anyio.CancelScope()}
    async with anyio.create_task_group() as tg:
        tg.start_soon(listener, "a", scopes["a"])
        await until(lambda: listening == ["a"])
        tg.start_soon(listener, "b", scopes["b"])
        await anyio.sleep(RETRY_SECONDS * 5)
        await notify("acme")
        await until(lambda: heard["a"] == ["acme"])
        assert listening == ["a"] and heard["b"] == [], "a standby heard an ingest"

        scopes["a"].cancel()  # its connection closes, and the lock goes with it
        await until(lambda: listening == ["a", "b"])
        await notify("globex")
        await until(lambda: heard["b"] == ["globex"])
        assert heard["a"] == ["acme"]
        scopes["b"].cancel()
