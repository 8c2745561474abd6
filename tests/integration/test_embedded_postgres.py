from __future__ import annotations

import os
from pathlib import Path

import psycopg

from memory.infrastructure.postgres.database import Database
from memory.infrastructure.postgres.embedded import EmbeddedPostgres


def test_two_homes_run_side_by_side_with_pgvector(cluster_home: Path) -> None:
    a = EmbeddedPostgres(cluster_home / "a", durable=False)
    b = EmbeddedPostgres(cluster_home / "b", durable=False)
    with a, b:
        assert a.url != b.url
        for cluster in (a, b):
            with psycopg.connect(cluster.url) as conn:
                row = conn.execute(
                    "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
                ).fetchone()
                assert row is not None
                major, minor = (int(x) for x in row[0].split(".")[:2])
                assert (major, minor) >= (0, 7)


def test_restart_keeps_data_and_second_process_attaches(cluster_home: Path) -> None:
    first = EmbeddedPostgres(cluster_home / "home", durable=False)
    with first:
        with psycopg.connect(first.url) as conn:
            conn.execute("CREATE TABLE kept (x int)")
            conn.execute("INSERT INTO kept VALUES (42)")
        attached = EmbeddedPostgres(cluster_home / "home", durable=False)
        assert attached.start() == first.url
        attached.stop()  # not the owner: must leave the server running
        with psycopg.connect(first.url) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    again = EmbeddedPostgres(cluster_home / "home", durable=False)
    with again, psycopg.connect(again.url) as conn:
        assert conn.execute("SELECT x FROM kept").fetchone() == (42,)
    assert not again.paths.socket_dir.exists(), "stop removes the socket directory"


def test_migrations_apply_once(empty_database_url: str) -> None:
    db = Database(empty_database_url)
    db.open()
    try:
        first = db.migrate()
        assert "0000_extensions.sql" in first
        assert db.migrate() == []
    finally:
        db.close()


def test_cluster_whose_recorded_owner_is_gone_is_adopted_and_stopped(cluster_home: Path) -> None:
    first = EmbeddedPostgres(cluster_home / "home", durable=False)
    first.start()
    try:
        # The pid is live (this process) but its start time is not: a reused pid.
        first.paths.owner_file.write_text(f"{os.getpid()} 1\n")
        adopter = EmbeddedPostgres(cluster_home / "home", durable=False)
        assert adopter.start() == first.url
        assert adopter.owned
        adopter.stop()
        assert not adopter.running()
        assert not first.paths.owner_file.exists()
    finally:
        first.stop()
