"""Opening the service's database at start-up: a database that cannot be reached is
`DatabaseUnavailable` at once (a starting server waits it out), one that refuses the
configuration or holds a newer schema is `DatabaseMisconfigured` (start-up stops and says
why), never the pool's long wait (docs/adr/0081)."""

from __future__ import annotations

import time

import pytest
from psycopg.conninfo import make_conninfo

from memory.application.errors import DatabaseUnavailable
from memory.infrastructure.postgres.availability import DatabaseMisconfigured
from memory.infrastructure.postgres.database import Database
from memory.infrastructure.postgres.embedded import free_port

# The pool's own wait when opening is 30 s; a refusal must come long before.
REFUSAL_SECONDS = 5.0


def _opened(url: str) -> float:
    started = time.monotonic()
    database = Database(url, min_size=1, max_size=1, timeout=1.0)
    try:
        database.open()
    finally:
        database.close()
    return time.monotonic() - started


def test_nothing_listening_is_unavailable_at_once() -> None:
    url = f"postgresql://memory@127.0.0.1:{free_port()}/memory"
    started = time.monotonic()
    with pytest.raises(DatabaseUnavailable):
        _opened(url)
    assert time.monotonic() - started < REFUSAL_SECONDS


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"user": "nobody", "password": "wrong"}, "password authentication failed"),
        ({"dbname": "no_such_database"}, 'database "no_such_database" does not exist'),
    ],
)
def test_a_refusal_by_the_server_is_misconfiguration(
    database_url: str, change: dict[str, str], said: str
) -> None:
    started = time.monotonic()
    with pytest.raises(DatabaseMisconfigured) as refused:
        _opened(make_conninfo(database_url, **change))
    assert said in str(refused.value)
    assert "socket" not in str(refused.value)  # the server's words, not libpq's preamble
    assert time.monotonic() - started < REFUSAL_SECONDS


def test_a_url_that_is_not_one_is_misconfiguration() -> None:
    with pytest.raises(DatabaseMisconfigured) as refused:
        _opened("postgresql://memory@[::1/memory")
    assert "not a valid URL" in str(refused.value)


def test_a_schema_newer_than_the_code_is_refused_and_left_alone(database_url: str) -> None:
    database = Database(database_url, min_size=1, max_size=1)
    database.open()
    try:
        database.migrate()
        database.check_schema()  # the schema this code wrote: fine
        with database.connection() as conn:
            conn.execute(
                "INSERT INTO memory_schema_migrations (name) VALUES ('9999_from_the_future.sql')"
            )
        for check in (database.check_schema, database.migrate):
            with pytest.raises(DatabaseMisconfigured) as refused:
                check()
            assert "9999_from_the_future.sql" in str(refused.value)
            assert "newer" in str(refused.value)
    finally:
        database.close()
