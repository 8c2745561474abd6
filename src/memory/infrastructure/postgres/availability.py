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

_log_lock = threading.Lock()
_last_logged = -LOG_INTERVAL_SECONDS


def is_connection_failure(exc: BaseException | None) -> bool:
    """True if `exc`, or an error it was raised from (`raise ... from`, as the eventsourcing
    library wraps psycopg's errors), says the database cannot be reached."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, DatabaseUnavailable):
            return True
        if isinstance(exc, psycopg.OperationalError):
            # No SQLSTATE: the client never got an answer (refused, lost, pool timeout).
            return exc.sqlstate is None or exc.sqlstate.startswith(CONNECTION_FAILURE_SQLSTATES)
        exc = exc.__cause__
    return False


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


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
