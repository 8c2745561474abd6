"""Which threads are waiting on the database, and since when (docs/adr/0082).

A database whose processes hang (stopped, swapped out, frozen storage) keeps its
connections open and answers nothing: no error ever comes, and neither a statement timeout
(the server enforces it, and the server is not running) nor TCP keepalives (the server's
kernel still acknowledges) end the wait. Only the caller can give up. Every database call
of the service (`Database.connection()`, the event store's recorders) is recorded here
while it runs, so that a request handler can see that its worker thread has been waiting on
the database for too long and answer instead of waiting with it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

# One database call of a request taking this long means the database has stopped answering:
# a request's statements take milliseconds, a connection is waited for at most
# MEMORY_DATABASE_TIMEOUT (2 s), and a search has its own 2 s budget. Generous, because a
# loaded machine and lock waits stretch legitimate calls, and a caller told "timeout" about
# a write that then succeeds must retry to find out. The default of
# MEMORY_DATABASE_STALL_TIMEOUT.
DATABASE_STALL_SECONDS = 10.0

_lock = threading.Lock()
_since: dict[int, float] = {}


@contextmanager
def waiting_on_database() -> Iterator[None]:
    """Record this thread as waiting on the database until the block ends. Nested calls
    (a savepoint inside a transaction) count from the outermost one."""
    ident = threading.get_ident()
    with _lock:
        outermost = ident not in _since
        if outermost:
            _since[ident] = time.monotonic()
    try:
        yield
    finally:
        if outermost:
            with _lock:
                del _since[ident]


def waiting_since(thread: int) -> float | None:
    """The `time.monotonic()` at which `thread` began its current database call, or None."""
    with _lock:
        return _since.get(thread)
