"""Which failures mean "the database is unavailable", and how they cross the boundary."""

from __future__ import annotations

import logging

import psycopg
import pytest
from eventsourcing.persistence import OperationalError as LibraryOperationalError
from psycopg import errors
from psycopg_pool import PoolTimeout

from memory.application.errors import DatabaseUnavailable
from memory.domain.errors import NotFound
from memory.infrastructure.postgres import availability
from memory.infrastructure.postgres.availability import (
    LOG_INTERVAL_SECONDS,
    DatabaseMisconfigured,
    database_boundary,
    is_connection_failure,
    is_unreachable,
    unavailable,
)
from memory.infrastructure.postgres.event_persistence import (
    LIBRARY_RETRY_ATTEMPTS,
    retry_unless_outage,
)


def wrapped(cause: Exception) -> LibraryOperationalError:
    """As the eventsourcing library raises a psycopg error (`raise ... from`)."""
    try:
        raise LibraryOperationalError(str(cause)) from cause
    except LibraryOperationalError as exc:
        return exc


def as_cause_of(cause: Exception | None) -> RuntimeError:
    """A worker's own failure raised from `cause` (or from nothing)."""
    try:
        raise RuntimeError("projector for m lost its lease") from cause
    except RuntimeError as exc:
        return exc


@pytest.mark.parametrize(
    "exc",
    [
        PoolTimeout("couldn't get a connection after 2.00 sec"),
        psycopg.OperationalError("connection failed: No such file or directory"),
        errors.AdminShutdown("terminating connection due to administrator command"),
        errors.CannotConnectNow("the database system is starting up"),
        wrapped(PoolTimeout("couldn't get a connection")),
        DatabaseUnavailable("down"),
        # A task group's: a worker whose pass lost its connection.
        ExceptionGroup("unhandled errors in a TaskGroup", [DatabaseUnavailable("down")]),
        # A projector whose lease connection ended under it (a restart).
        as_cause_of(errors.AdminShutdown("terminating connection")),
    ],
)
def test_connection_failures_mean_the_database_is_unavailable(exc: Exception) -> None:
    assert is_connection_failure(exc)


@pytest.mark.parametrize(
    "exc",
    [
        errors.QueryCanceled("canceling statement due to statement timeout"),
        errors.LockNotAvailable("could not obtain lock"),
        errors.SerializationFailure("could not serialize access"),
        errors.NumericValueOutOfRange("timestamp out of range"),
        wrapped(errors.QueryCanceled("canceling statement")),
        ValueError("not a database error"),
        ExceptionGroup("unhandled errors", [DatabaseUnavailable("down"), ValueError("a bug")]),
        as_cause_of(None),
    ],
)
def test_other_failures_are_not_an_outage(exc: Exception) -> None:
    assert not is_connection_failure(exc)


def test_the_boundary_translates_only_connection_failures() -> None:
    with pytest.raises(DatabaseUnavailable) as raised, database_boundary():
        raise PoolTimeout("couldn't get a connection")
    assert raised.value.code == "database_unavailable"
    assert "connection" not in raised.value.message, "socket paths and hosts stay in the log"
    with pytest.raises(errors.QueryCanceled), database_boundary():
        raise errors.QueryCanceled("statement timeout")
    with pytest.raises(NotFound), database_boundary():
        raise NotFound("no such policy")


def test_a_library_call_fails_at_once_when_the_pool_gave_no_connection() -> None:
    calls: list[int] = []

    @retry_unless_outage
    def read() -> int:
        calls.append(1)
        raise wrapped(PoolTimeout("couldn't get a connection after 2.00 sec"))

    with pytest.raises(DatabaseUnavailable):
        read()
    assert len(calls) == 1  # the library would have waited for the pool ten times


def test_a_connection_that_died_idle_is_retried_at_once_on_the_next() -> None:
    calls: list[int] = []

    @retry_unless_outage
    def read() -> int:
        calls.append(1)
        if len(calls) < 3:
            raise wrapped(psycopg.OperationalError("server closed the connection unexpectedly"))
        return 42

    assert read() == 42
    assert len(calls) == 3


def test_lost_connections_are_retried_a_bounded_number_of_times() -> None:
    calls: list[int] = []

    @retry_unless_outage
    def read() -> int:
        calls.append(1)
        raise wrapped(psycopg.OperationalError("server closed the connection unexpectedly"))

    with pytest.raises(DatabaseUnavailable):
        read()
    assert len(calls) == LIBRARY_RETRY_ATTEMPTS


def test_other_library_errors_keep_the_library_retries() -> None:
    calls: list[int] = []

    @retry_unless_outage
    def write() -> str:
        calls.append(1)
        if len(calls) == 1:
            raise wrapped(errors.SerializationFailure("could not serialize access"))
        return "ok"

    assert write() == "ok"
    assert len(calls) == 2


def test_an_outage_is_logged_once_not_once_per_request(caplog: pytest.LogCaptureFixture) -> None:
    availability._last_logged = -LOG_INTERVAL_SECONDS  # no earlier outage in this process
    with caplog.at_level(logging.WARNING, logger=availability.__name__):
        for _ in range(5):
            unavailable(PoolTimeout("couldn't get a connection after 2.00 sec"))
    assert [r.getMessage() for r in caplog.records] == [
        "database unavailable: couldn't get a connection after 2.00 sec"
    ]


SOCKET = 'connection failed: connection to server on socket "/tmp/pg/.s.PGSQL.5432" failed: '


@pytest.mark.parametrize(
    "exc",
    [
        psycopg.OperationalError(SOCKET + "No such file or directory"),
        psycopg.OperationalError(
            'connection failed: connection to server at "127.0.0.1", port 5432 failed: '
            "Connection refused"
        ),
        psycopg.OperationalError("failed to resolve host 'db': Name or service not known"),
        psycopg.OperationalError(SOCKET + "FATAL:  the database system is starting up"),
        psycopg.OperationalError(SOCKET + "FATAL:  sorry, too many clients already"),
        PoolTimeout("couldn't get a connection after 2.00 sec"),
        DatabaseUnavailable("down"),
        wrapped(PoolTimeout("couldn't get a connection")),
    ],
)
def test_what_a_starting_server_waits_out(exc: Exception) -> None:
    assert is_unreachable(exc)


def _raised_from(cause: Exception) -> DatabaseUnavailable:
    try:
        raise unavailable(cause) from cause
    except DatabaseUnavailable as exc:
        return exc


@pytest.mark.parametrize(
    "exc",
    [
        psycopg.OperationalError(
            SOCKET + 'FATAL:  password authentication failed for user "memory"'
        ),
        psycopg.OperationalError(SOCKET + 'FATAL:  database "memroy" does not exist'),
        psycopg.OperationalError(SOCKET + 'FATAL:  role "nobody" does not exist'),
        psycopg.ProgrammingError('invalid connection option "foo"'),
        DatabaseMisconfigured("the database schema is newer than this version"),
        # Raised through the boundary, the server's refusal is still configuration.
        _raised_from(
            psycopg.OperationalError(SOCKET + "FATAL:  password authentication failed for")
        ),
        errors.UndefinedTable("relation does not exist"),
    ],
)
def test_what_a_starting_server_does_not_wait_for(exc: Exception) -> None:
    assert not is_unreachable(exc)
