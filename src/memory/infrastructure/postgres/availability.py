"""When the database is unreachable: which failures mean that, and the one translation of
them into the application's `DatabaseUnavailable` (HTTP 503 `database_unavailable`).

Only failures of the connection itself count: no connection free within the pool's wait, a
connection refused or lost, a server shutting down or starting up. A cancelled statement
(57014, the search budget's 504), a lock timeout or a data error is something else and passes
through unchanged.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

from memory.application.errors import DatabaseUnavailable
from memory.domain.errors import DomainError

log = logging.getLogger(__name__)

# SQLSTATE classes of a lost or refused connection: 08 (connection exception) and 57P
# (operator intervention: admin/crash shutdown, cannot connect now, database dropped,
# idle session timeout). 57014 (query_canceled) is class 57 but not 57P.
CONNECTION_FAILURE_SQLSTATES = ("08", "57P")
# While the database stays unreachable, every request and every probe fails: the log gets one
# line for the first failure and then at most one line per this many seconds.
LOG_INTERVAL_SECONDS = 60.0

# What the server says when it refuses a connection for now, not for good (libpq passes on
# the server's message; a connection attempt's error carries no SQLSTATE): 57P03
# cannot_connect_now and 53300 too_many_connections. Any other refusal from a server that
# answered (bad password, unknown role or database, pg_hba) is configuration: waiting will
# not change it. A server with non-English `lc_messages` words these differently; its
# refusals then count as configuration too, so start-up fails and says why.
TRANSIENT_REFUSALS = (
    "the database system is starting up",
    "the database system is shutting down",
    "the database system is in recovery mode",
    "the database system is not yet accepting connections",
    "the database system is not accepting connections",
    "sorry, too many clients already",
    "remaining connection slots are reserved",
)
# libpq's prefix of a refusal sent by the server itself (rather than a failure to reach it).
SERVER_REFUSAL = "FATAL:"

_log_lock = threading.Lock()
_last_logged = -LOG_INTERVAL_SECONDS


def is_connection_failure(exc: BaseException | None) -> bool:
    """True if `exc`, or an error it was raised from (`raise ... from`, as the eventsourcing
    library wraps psycopg's errors), says the database cannot be reached. A group of errors
    (a task group's) is one if every error in it is."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, BaseExceptionGroup):
            return all(is_connection_failure(e) for e in exc.exceptions)
        if isinstance(exc, DatabaseUnavailable):
            return True
        if isinstance(exc, psycopg.OperationalError):
            # No SQLSTATE: the client never got an answer (refused, lost, pool timeout).
            return exc.sqlstate is None or exc.sqlstate.startswith(CONNECTION_FAILURE_SQLSTATES)
        exc = exc.__cause__
    return False


class DatabaseMisconfigured(Exception):
    """The database answered and refused this configuration (credentials, database name,
    connection string, or a schema newer than this code): retrying will not help, so a
    starting process stops and says why instead of waiting for it."""


def is_unreachable(exc: BaseException | None) -> bool:
    """True if `exc` (or an error it was raised from) means the database cannot be reached
    *for now* (down, starting, no free connection): a connection failure that is not a
    refusal of the configuration. What a starting server waits out (docs/adr/0081)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, DatabaseMisconfigured):
            return False
        if isinstance(exc, psycopg.OperationalError):
            if not is_connection_failure(exc):
                return False
            text = str(exc)
            return SERVER_REFUSAL not in text or any(t in text for t in TRANSIENT_REFUSALS)
        if exc.__cause__ is None and isinstance(exc, DatabaseUnavailable):
            return True
        exc = exc.__cause__
    return False


def reach(url: str, *, connect_timeout: int) -> None:
    """Open one connection to `url` and close it: `DatabaseUnavailable` if the database
    cannot be reached for now, `DatabaseMisconfigured` if it refuses this configuration
    (or the URL is not one)."""
    try:
        psycopg.connect(url, connect_timeout=connect_timeout).close()
    except psycopg.ProgrammingError as exc:  # libpq could not even parse the URL
        raise DatabaseMisconfigured(f"MEMORY_DATABASE_URL is not a valid URL: {exc}") from exc
    except psycopg.OperationalError as exc:
        if is_unreachable(exc):
            raise unavailable(exc) from exc
        raise DatabaseMisconfigured(
            f"the database refused the connection: {_server_message(exc)}"
        ) from exc


def unavailable(exc: BaseException) -> DatabaseUnavailable:
    """The application's error for connection failure `exc` (whose text, naming hosts and
    sockets, goes to the log rather than to the client)."""
    global _last_logged
    with _log_lock:
        now = time.monotonic()
        due = now - _last_logged >= LOG_INTERVAL_SECONDS
        if due:
            _last_logged = now
    level = logging.WARNING if due else logging.DEBUG
    log.log(level, "database unavailable: %s", _first_line(exc))
    return DatabaseUnavailable("the database is unavailable; retry later")


@contextmanager
def database_boundary() -> Iterator[None]:
    """Turn a connection failure raised inside the block into `DatabaseUnavailable`; every
    other error passes unchanged."""
    try:
        yield
    except DomainError:
        raise
    except Exception as exc:
        if is_connection_failure(exc):
            raise unavailable(exc) from exc
        raise


def _server_message(exc: BaseException) -> str:
    """The server's own words (`password authentication failed for user "x"`), without
    libpq's preamble naming the socket or host."""
    text = _first_line(exc)
    _, found, message = text.partition(SERVER_REFUSAL)
    return message.strip() if found else text


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
