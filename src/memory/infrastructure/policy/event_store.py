"""The `PolicyEmbedding` event store: the eventsourcing library's PostgreSQL persistence,
configured from the service's database URL."""

from __future__ import annotations

from typing import cast
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.persistence import IntegrityError
from eventsourcing.postgres import PostgresDatastore
from eventsourcing.utils import get_topic
from psycopg.conninfo import conninfo_to_dict

from memory.application.policy.ports import RecordConflict
from memory.domain.policy.aggregate import PolicyEmbedding
from memory.domain.policy.policy_id import PolicyId
from memory.infrastructure.policy.event_recorder import PolicyEventRecorder

# Library connections per pool. Each process has a few pools (the command side, the
# projector's subscription, its view), so they are kept small; writes are short.
EVENT_STORE_POOL_SIZE = 2
EVENT_STORE_POOL_OVERFLOW = 4
CONTENT_TOPICS = frozenset(
    {get_topic(PolicyEmbedding.Stored), get_topic(PolicyEmbedding.ContentUpdated)}
)


class PolicyApplication(Application[UUID]):
    """The event-sourced application of policy memory. Its name makes the library's table
    `policy_events` (and the NOTIFY channel of the same name)."""

    name = "policy"


def event_store_env(database_url: str) -> dict[str, str]:
    """The library's settings for `database_url` (a libpq URL or key=value string; the host
    may be a socket directory). Keys carry the application's prefix, so they win over any
    unprefixed POSTGRES_* variables in the process environment."""
    params = conninfo_to_dict(database_url)
    prefix = PolicyApplication.name.upper()

    def param(key: str) -> str:
        value = params.get(key)
        return "" if value is None else str(value)

    values = {
        "PERSISTENCE_MODULE": "eventsourcing.postgres",
        "POSTGRES_DBNAME": param("dbname"),
        "POSTGRES_HOST": param("host"),
        "POSTGRES_PORT": param("port") or "5432",
        "POSTGRES_USER": param("user"),
        "POSTGRES_PASSWORD": param("password"),
        "POSTGRES_POOL_SIZE": str(EVENT_STORE_POOL_SIZE),
        "POSTGRES_MAX_OVERFLOW": str(EVENT_STORE_POOL_OVERFLOW),
        "POSTGRES_CONNECT_TIMEOUT": param("connect_timeout") or "30",
        "APPLICATION_RECORDER_TOPIC": get_topic(PolicyEventRecorder),
    }
    return {f"{prefix}_{key}": value for key, value in values.items()}


class EventSourcedPolicyLog:
    """`PolicyEventLog` and `PolicyLogOutlook` over the library's application. Creating it
    creates the event store's tables if they do not exist."""

    def __init__(self, app: PolicyApplication) -> None:
        self.app = app

    @classmethod
    def connect(cls, database_url: str) -> EventSourcedPolicyLog:
        return cls(PolicyApplication(env=event_store_env(database_url)))

    def get(self, policy_id: PolicyId) -> PolicyEmbedding | None:
        try:
            aggregate: PolicyEmbedding = self.app.repository.get(
                PolicyEmbedding.create_id(policy_id.value)
            )
        except AggregateNotFoundError:
            return None
        return aggregate

    def events(self, policy_id: PolicyId) -> list[PolicyEmbedding.Event]:
        originator_id = PolicyEmbedding.create_id(policy_id.value)
        return [cast(PolicyEmbedding.Event, e) for e in self.app.events.get(originator_id)]

    def save(self, *aggregates: PolicyEmbedding) -> int:
        try:
            recordings = self.app.save(*aggregates)
        except IntegrityError as exc:
            raise RecordConflict(str(exc)) from exc
        if not recordings:
            raise ValueError("nothing to save")
        return recordings[-1].notification.id

    def head(self) -> int | None:
        return self.app.recorder.max_notification_id()

    def has_later_content(self, aggregate_id: UUID, version: int) -> bool:
        later = self.app.recorder.select_events(aggregate_id, gt=version)
        return any(stored.topic in CONTENT_TOPICS for stored in later)

    def close(self) -> None:
        self.app.close()


def view_datastore(database_url: str) -> PostgresDatastore:
    """A library datastore (small pool) for a projection's view."""
    params = conninfo_to_dict(database_url)
    return PostgresDatastore(
        dbname=str(params.get("dbname") or ""),
        host=str(params.get("host") or ""),
        port=str(params.get("port") or "5432"),
        user=str(params.get("user") or ""),
        password=str(params.get("password") or ""),
        pool_size=EVENT_STORE_POOL_SIZE,
        max_overflow=EVENT_STORE_POOL_OVERFLOW,
    )
