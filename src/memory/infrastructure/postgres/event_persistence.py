"""The eventsourcing library's PostgreSQL persistence, made to fail fast during an outage.

The library retries a failed read or write ten times (`@retry`, 0.2 s apart), and each
attempt first waits for a pooled connection. While the database is down that multiplies the
pool's wait by ten: a policy store hung for half a minute. Here, when the pool could not
provide a connection in its wait, that is final: the application's `DatabaseUnavailable` at
once. A connection that broke in use (one that died idle while the server restarted) is
retried at once, on the next connection the pool gives; every other error keeps the
library's retries. The library's pools get the same bounds as the service's own
(`Database`): a bounded wait and a short background reconnect (docs/adr/0047).

Every application of the library in `memory` names `FACTORY_TOPIC` as its persistence
module (`EventStoreConnection.env`), so all of its recorders are these.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any, TypeVar

from eventsourcing.persistence import InterfaceError, OperationalError
from eventsourcing.postgres import (
    PostgresAggregateRecorder,
    PostgresApplicationRecorder,
    PostgresDatastore,
    PostgresFactory,
    PostgresTrackingRecorder,
)
from eventsourcing.utils import Environment, EnvType, get_topic
from psycopg_pool import PoolClosed, PoolTimeout, TooManyRequests

from memory.infrastructure.postgres.availability import is_connection_failure, unavailable
from memory.infrastructure.postgres.database import (
    DEFAULT_TIMEOUT_SECONDS,
    RECONNECT_GIVE_UP_SECONDS,
    connect_timeout,
)
from memory.infrastructure.postgres.database_waits import waiting_on_database

# The library's own retry of errors other than a connection failure (serialisation
# failures, a connection that broke mid-statement), kept as it was.
LIBRARY_RETRY_ATTEMPTS = 10
LIBRARY_RETRY_WAIT_SECONDS = 0.2
# The environment key (with the application's prefix) of the pool's wait, in seconds.
DATABASE_TIMEOUT_KEY = "DATABASE_TIMEOUT"
# The environment key (with the application's prefix): "n" when the URL may be a
# transaction-pooling PgBouncer, where a statement prepared in one transaction's server
# session is missing in the next one's (docs/adr/0061).
PREPARED_STATEMENTS_KEY = "PREPARED_STATEMENTS"

F = TypeVar("F", bound=Callable[..., Any])


def retry_unless_outage(attempt: F) -> F:
    """Retry `attempt` as the library does, except a connection failure, which becomes
    `DatabaseUnavailable` at once."""

    @functools.wraps(attempt)
    def call(*args: Any, **kwargs: Any) -> Any:
        for attempts in range(1, LIBRARY_RETRY_ATTEMPTS + 1):
            try:
                with waiting_on_database():
                    return attempt(*args, **kwargs)
            except (InterfaceError, OperationalError) as exc:
                last = attempts == LIBRARY_RETRY_ATTEMPTS
                if is_connection_failure(exc):
                    if last or _pool_gave_up(exc):
                        raise unavailable(exc) from exc
                    continue
                if last:
                    raise
                time.sleep(LIBRARY_RETRY_WAIT_SECONDS)
        raise AssertionError("unreachable")

    return call  # type: ignore[return-value]


def _pool_gave_up(exc: BaseException | None) -> bool:
    """The pool gave no connection (it waited its time already): retrying cannot help."""
    while exc is not None:
        if isinstance(exc, PoolTimeout | PoolClosed | TooManyRequests):
            return True
        exc = exc.__cause__
    return False


def fail_fast_on_outage(retried: F) -> F:
    """A library method under `@retry`, retried by `retry_unless_outage` instead (`@retry`
    keeps the undecorated method as `__wrapped__`, through `functools.wraps`)."""
    attempt: F = retried.__wrapped__  # type: ignore[attr-defined]
    return retry_unless_outage(attempt)


class OutageAwareAggregateRecorder(PostgresAggregateRecorder):
    insert_events = fail_fast_on_outage(PostgresAggregateRecorder.insert_events)
    select_events = fail_fast_on_outage(PostgresAggregateRecorder.select_events)


class OutageAwareApplicationRecorder(PostgresApplicationRecorder):
    insert_events = fail_fast_on_outage(PostgresApplicationRecorder.insert_events)
    select_events = fail_fast_on_outage(PostgresApplicationRecorder.select_events)
    select_notifications = fail_fast_on_outage(PostgresApplicationRecorder.select_notifications)
    max_notification_id = fail_fast_on_outage(PostgresApplicationRecorder.max_notification_id)


class OutageAwareTrackingRecorder(PostgresTrackingRecorder):
    insert_tracking = fail_fast_on_outage(PostgresTrackingRecorder.insert_tracking)
    max_tracking_id = fail_fast_on_outage(PostgresTrackingRecorder.max_tracking_id)
    has_tracking_id = fail_fast_on_outage(PostgresTrackingRecorder.has_tracking_id)


def bound_pool(
    datastore: PostgresDatastore, wait_seconds: float, *, prepared_statements: bool = True
) -> PostgresDatastore:
    """Give a library datastore's pool the service's bounds (see `Database`). The library
    takes neither a float wait nor a reconnect timeout from its settings; both are plain
    attributes of the psycopg pool, read on every use."""
    datastore.pool.timeout = wait_seconds
    datastore.pool.reconnect_timeout = RECONNECT_GIVE_UP_SECONDS
    # The library's "connect timeout" is the pool's wait; libpq's own has no default, so a
    # new connection to an unreachable host would wait for the operating system.
    if isinstance(datastore.pool.kwargs, dict):
        datastore.pool.kwargs["connect_timeout"] = connect_timeout(wait_seconds)
        if not prepared_statements:
            # The library asks for `prepare=True` on its hot statements; psycopg prepares
            # nothing on a connection whose threshold is None, whatever the call asks.
            datastore.pool.kwargs["prepare_threshold"] = None
    return datastore


class OutageAwarePostgresFactory(PostgresFactory):
    """The library's PostgreSQL factory with the recorders above and bounded pools."""

    aggregate_recorder_class = OutageAwareAggregateRecorder
    application_recorder_class = OutageAwareApplicationRecorder
    tracking_recorder_class = OutageAwareTrackingRecorder

    def __init__(self, env: Environment | EnvType | None) -> None:
        super().__init__(env)
        wait = self.env.get(DATABASE_TIMEOUT_KEY)
        bound_pool(
            self.datastore,
            float(wait) if wait else DEFAULT_TIMEOUT_SECONDS,
            prepared_statements=self.env.get(PREPARED_STATEMENTS_KEY, "y") != "n",
        )


FACTORY_TOPIC = get_topic(OutageAwarePostgresFactory)
