"""The eventsourcing library's PostgreSQL persistence, configured from the service's database
URL: the one translation both contexts' event-sourced applications (policy's
`PolicyApplication`, history's `SweepWatermarks`) and the projector's view use.

The library takes its connection as separate POSTGRES_* settings, not as a URL. Missing
parts mean what they mean to libpq for the service's own pool (an empty host or user is
libpq's default: the local socket, the OS user), so every pool of a process reaches the same
server as the same user. Every library pool has the bounds of the service's own while the
database is down (`event_persistence`, docs/adr/0047).
"""

from __future__ import annotations

from dataclasses import dataclass

from eventsourcing.postgres import PostgresDatastore
from psycopg.conninfo import conninfo_to_dict

from memory.infrastructure.postgres.database import (
    DEFAULT_TIMEOUT_SECONDS,
    Database,
    connect_timeout,
)
from memory.infrastructure.postgres.event_persistence import (
    DATABASE_TIMEOUT_KEY,
    FACTORY_TOPIC,
    PREPARED_STATEMENTS_KEY,
    bound_pool,
)

# Connections per library pool (plus overflow under bursts). Each process has a few of them
# beside the service's own pool (see docs/architecture.md, "Connections"); their writes are
# short, so they are kept small.
LIBRARY_POOL_SIZE = 2
LIBRARY_POOL_OVERFLOW = 4
DEFAULT_PORT = "5432"


@dataclass(frozen=True, slots=True)
class EventStoreConnection:
    """Where the library connects, parsed once from a libpq URL or key=value string (the
    host may be a socket directory, as for the embedded cluster)."""

    dbname: str
    host: str
    port: str
    user: str
    password: str
    # Longest wait for a pooled connection (`MEMORY_DATABASE_TIMEOUT`).
    wait_seconds: float
    # False behind a transaction-pooling PgBouncer (see `Database`): the library prepares
    # its statements otherwise.
    prepared_statements: bool = True

    @classmethod
    def for_database(cls, database: Database, *, direct: bool = False) -> EventStoreConnection:
        """The library's connection to `database`: its pooled URL for statements, or its
        direct URL (`direct`) for a subscription, whose LISTEN needs a session."""
        if direct:
            return cls.from_url(database.direct_url, wait_seconds=database.timeout)
        return cls.from_url(
            database.url,
            wait_seconds=database.timeout,
            prepared_statements=database.prepared_statements,
        )

    @classmethod
    def from_url(
        cls,
        database_url: str,
        *,
        wait_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        prepared_statements: bool = True,
    ) -> EventStoreConnection:
        params = conninfo_to_dict(database_url)

        def param(key: str, default: str = "") -> str:
            value = params.get(key)
            return default if value is None or value == "" else str(value)

        return cls(
            dbname=param("dbname"),
            host=param("host"),
            port=param("port", DEFAULT_PORT),
            user=param("user"),
            password=param("password"),
            wait_seconds=wait_seconds,
            prepared_statements=prepared_statements,
        )

    def env(self, application_name: str, *, recorder_topic: str | None = None) -> dict[str, str]:
        """The library's settings for an application called `application_name`. Keys carry
        the application's prefix, so they win over any unprefixed POSTGRES_* variables in
        the process environment."""
        values = {
            "PERSISTENCE_MODULE": FACTORY_TOPIC,
            "POSTGRES_DBNAME": self.dbname,
            "POSTGRES_HOST": self.host,
            "POSTGRES_PORT": self.port,
            "POSTGRES_USER": self.user,
            "POSTGRES_PASSWORD": self.password,
            "POSTGRES_POOL_SIZE": str(LIBRARY_POOL_SIZE),
            "POSTGRES_MAX_OVERFLOW": str(LIBRARY_POOL_OVERFLOW),
            # The library's "connect timeout" is its pool's wait, in whole seconds; the
            # factory sets the exact wait from DATABASE_TIMEOUT.
            "POSTGRES_CONNECT_TIMEOUT": str(connect_timeout(self.wait_seconds)),
            DATABASE_TIMEOUT_KEY: str(self.wait_seconds),
            PREPARED_STATEMENTS_KEY: "y" if self.prepared_statements else "n",
            "CREATE_TABLE": "y",
        }
        if recorder_topic is not None:
            values["APPLICATION_RECORDER_TOPIC"] = recorder_topic
        prefix = application_name.upper()
        return {f"{prefix}_{key}": value for key, value in values.items()}

    def datastore(self) -> PostgresDatastore:
        """A library datastore (a small pool) for a projection's view."""
        datastore = PostgresDatastore(
            dbname=self.dbname,
            host=self.host,
            port=self.port,
            user=self.user,
            password=self.password,
            connect_timeout=self.wait_seconds,
            pool_size=LIBRARY_POOL_SIZE,
            max_overflow=LIBRARY_POOL_OVERFLOW,
        )
        return bound_pool(
            datastore, self.wait_seconds, prepared_statements=self.prepared_statements
        )
