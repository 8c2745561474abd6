"""One sweeper per (partition, model): session-level advisory locks on a dedicated
autocommit connection, so holding a lock never holds a transaction open (the model runs
while it is held)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager

import psycopg
from psycopg import errors

from memory.domain.history.partition import Partition
from memory.domain.history.watermark import watermark_id
from memory.infrastructure.history.locks import SWEEP_LOCK_CLASS
from memory.infrastructure.postgres.availability import database_boundary
from memory.infrastructure.postgres.database import DEFAULT_TIMEOUT_SECONDS, connect_timeout


def lock_key(partition: Partition, model: str) -> int:
    """A signed 32-bit key from the watermark id (a collision only serialises two
    partitions, it never lets two sweepers into one)."""
    return int.from_bytes(watermark_id(partition, model).bytes[:4], "big", signed=True)


class _Session:
    def __init__(self, conn: psycopg.Connection[tuple[object, ...]], wait: bool) -> None:
        self._conn = conn
        self._wait = wait

    @contextmanager
    def hold(self, partition: Partition, model: str) -> Iterator[bool]:
        key = (SWEEP_LOCK_CLASS, lock_key(partition, model))
        if self._wait:
            try:
                self._conn.execute("SELECT pg_advisory_lock(%s, %s)", key)
                held = True
            except errors.LockNotAvailable:
                held = False
        else:
            row = self._conn.execute("SELECT pg_try_advisory_lock(%s, %s)", key).fetchone()
            held = bool(row and row[0])
        try:
            yield held
        finally:
            if held:
                self._conn.execute("SELECT pg_advisory_unlock(%s, %s)", key)

    @contextmanager
    def hold_all(self, partitions: Sequence[Partition], model: str) -> Iterator[set[Partition]]:
        """Without waiting: one statement tries every lock, one releases those held. (Two
        partitions whose keys collide are both held: session locks count per call.)"""
        if self._wait:
            with ExitStack() as stack:
                yield {p for p in partitions if stack.enter_context(self.hold(p, model))}
            return
        keys = [lock_key(p, model) for p in partitions]
        rows = self._conn.execute(
            "SELECT pg_try_advisory_lock(%s, k) FROM unnest(%s::int[]) WITH ORDINALITY AS"
            " t(k, i) ORDER BY i",
            (SWEEP_LOCK_CLASS, keys),
        ).fetchall()
        held = [p for p, row in zip(partitions, rows, strict=True) if row[0]]
        try:
            yield set(held)
        finally:
            if held:
                self._conn.execute(
                    "SELECT pg_advisory_unlock(%s, k) FROM unnest(%s::int[]) AS t(k)",
                    (SWEEP_LOCK_CLASS, [lock_key(p, model) for p in held]),
                )


class AdvisoryPartitionLocks:
    def __init__(
        self, url: str, *, wait_timeout: float, connect_seconds: float = DEFAULT_TIMEOUT_SECONDS
    ) -> None:
        self._url = url
        self._wait_timeout = wait_timeout
        self._connect_timeout = connect_timeout(connect_seconds)

    @contextmanager
    def session(self, *, wait: bool) -> Iterator[_Session]:
        with (
            database_boundary(),
            psycopg.connect(
                self._url, autocommit=True, connect_timeout=self._connect_timeout
            ) as conn,
        ):
            if wait:
                conn.execute(f"SET lock_timeout = {int(self._wait_timeout * 1000)}")
            yield _Session(conn, wait)
