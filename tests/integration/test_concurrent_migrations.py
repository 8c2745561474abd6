"""Starters migrating one fresh database at the same time: each migration is applied once,
and none of them fails (the second starter waits for the first one's commit)."""

from __future__ import annotations

import threading

from memory.infrastructure.postgres.database import Database

STARTERS = 3


def test_concurrent_starters_apply_each_migration_once(empty_database_url: str) -> None:
    databases = [Database(empty_database_url, min_size=1, max_size=2) for _ in range(STARTERS)]
    for database in databases:
        database.open()
    applied: list[list[str]] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(STARTERS)

    def start(database: Database) -> None:
        barrier.wait()
        try:
            applied.append(database.migrate())
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=start, args=(db,)) for db in databases]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    finally:
        for database in databases:
            database.close()
    assert errors == []
    names = [name for run in applied for name in run]
    assert names and len(names) == len(set(names))  # every migration applied exactly once
