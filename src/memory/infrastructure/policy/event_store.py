"""The `PolicyEmbedding` event store: the eventsourcing library's PostgreSQL persistence,
configured from the service's database URL (`memory.infrastructure.postgres.event_store`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.persistence import IntegrityError
from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore
from eventsourcing.utils import get_topic
from psycopg.errors import UniqueViolation

from memory.application.policy.ports import RecordConflict
from memory.domain.policy.aggregate import PolicyEmbedding
from memory.domain.policy.namespace import PolicyAddress
from memory.infrastructure.policy.event_recorder import PolicyEventRecorder
from memory.infrastructure.postgres.database import DEFAULT_TIMEOUT_SECONDS, Database
from memory.infrastructure.postgres.event_append import EventAppender
from memory.infrastructure.postgres.event_store import EventStoreConnection

# Events after which an earlier text is never searched again.
CONTENT_TOPICS = frozenset(
    get_topic(e)
    for e in (
        PolicyEmbedding.Stored,
        PolicyEmbedding.ContentUpdated,
        PolicyEmbedding.StoredAgain,
        PolicyEmbedding.Deleted,
    )
)


class PolicyApplication(Application[UUID]):
    """The event-sourced application of policy memory. Its name makes the library's table
    `policy_events` (and the NOTIFY channel of the same name)."""

    name = "policy"


def event_store_env(
    database_url: str,
    *,
    wait_seconds: float = DEFAULT_TIMEOUT_SECONDS,
    prepared_statements: bool = True,
) -> dict[str, str]:
    """The library's settings for the policy application on `database_url`."""
    return policy_env(
        EventStoreConnection.from_url(
            database_url, wait_seconds=wait_seconds, prepared_statements=prepared_statements
        )
    )


def policy_env(connection: EventStoreConnection) -> dict[str, str]:
    """The library's settings for the policy application over `connection`."""
    return connection.env(PolicyApplication.name, recorder_topic=get_topic(PolicyEventRecorder))


class EventSourcedPolicyLog:
    """`PolicyEventLog` and `PolicyLogOutlook` over the library's application. Creating it
    creates the event store's tables if they do not exist."""

    def __init__(self, app: PolicyApplication, database: Database | None = None) -> None:
        """With `database`, a save made while that database has a transaction open joins
        it (how a deletion commits with its audit event, docs/adr/0079)."""
        self.app = app
        self._joins: tuple[Database, EventAppender] | None = None
        if database is not None:
            recorder = app.recorder
            assert isinstance(recorder, PostgresApplicationRecorder)
            self._joins = (database, EventAppender(recorder))

    @classmethod
    def connect(
        cls, database_url: str, *, wait_seconds: float = DEFAULT_TIMEOUT_SECONDS
    ) -> EventSourcedPolicyLog:
        env = event_store_env(database_url, wait_seconds=wait_seconds)
        return cls(PolicyApplication(env=env))

    @property
    def datastore(self) -> PostgresDatastore:
        """The library pool this log records through (shared with the active projector's
        view, so a process has one policy pool rather than two)."""
        recorder = self.app.recorder
        assert isinstance(recorder, PostgresApplicationRecorder)
        return recorder.datastore

    @classmethod
    def open(cls, database: Database) -> EventSourcedPolicyLog:
        """`connect` for a service process: the library's tables are created under the
        migration lock, so servers starting together on a fresh database do not race on
        its `CREATE TYPE`."""
        with database.migration_lock():
            return cls.for_database(database)

    @classmethod
    def for_database(cls, database: Database) -> EventSourcedPolicyLog:
        """The log on the service's database, over its pooled URL."""
        return cls(
            PolicyApplication(env=policy_env(EventStoreConnection.for_database(database))),
            database,
        )

    def get(self, address: PolicyAddress) -> PolicyEmbedding | None:
        try:
            aggregate: PolicyEmbedding = self.app.repository.get(address.aggregate_id)
        except AggregateNotFoundError:
            return None
        return aggregate

    def events(self, address: PolicyAddress) -> list[PolicyEmbedding.Event]:
        return [cast(PolicyEmbedding.Event, e) for e in self.app.events.get(address.aggregate_id)]

    def save(self, *aggregates: PolicyEmbedding) -> int:
        if self._joins is not None and self._joins[0].in_transaction:
            return self._save_in_transaction(*self._joins, aggregates)
        try:
            recordings = self.app.save(*aggregates)
        except IntegrityError as exc:
            raise RecordConflict(str(exc)) from exc
        if not recordings:
            raise ValueError("nothing to save")
        return recordings[-1].notification.id

    def _save_in_transaction(
        self, database: Database, appender: EventAppender, aggregates: Sequence[PolicyEmbedding]
    ) -> int:
        stored = [
            self.app.mapper.to_stored_event(event)
            for aggregate in aggregates
            for event in aggregate.collect_events()
        ]
        if not stored:
            raise ValueError("nothing to save")
        try:
            # A savepoint of the open transaction: a conflict undoes only this attempt.
            with database.connection() as conn:
                ids = appender.append(conn, stored)
        except UniqueViolation as exc:
            raise RecordConflict(str(exc)) from exc
        return ids[-1]

    def head(self) -> int | None:
        return self.app.recorder.max_notification_id()

    def has_later_content(self, aggregate_id: UUID, version: int) -> bool:
        later = self.app.recorder.select_events(aggregate_id, gt=version)
        return any(stored.topic in CONTENT_TOPICS for stored in later)

    def close(self) -> None:
        self.app.close()
