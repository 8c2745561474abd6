"""Port contract cases: each case runs once against the in-memory fake of a port
(tests/fakes.py) and once against its PostgreSQL adapter, so that the fakes the unit tests
stand on cannot drift from what the adapters do (docs/adr/0125).

A fixture here gives either implementation, by its parameter `in_memory` or `postgres`."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from tests.conftest import migrated_database
from tests.fakes import (
    FakeModel,
    InMemoryAuditTrail,
    InMemoryChatEventLog,
    InMemoryFeatureFlags,
    InMemoryHistory,
    InMemoryKeyStore,
    InMemoryPartitionLocks,
    InMemoryPolicy,
    InMemoryPolicyReadModel,
    InMemoryPolicySimilarityDistribution,
    InMemoryPolicyTable,
    InMemoryPolicyView,
    InMemoryRetention,
    InMemoryWindowEmbeddings,
)
from tests.integration.port_contracts.implementations import (
    POLICY_MODEL,
    HistoryAdapters,
    HistoryStores,
    ModelStoreSide,
    PolicyLogSide,
    PolicyTable,
    WaiterSide,
)

from memory.application.access.ports import KeyStore
from memory.application.audit.ports import AuditTrail
from memory.application.history.ports import (
    FeatureFlagStore,
    PartitionLockFactory,
    WatermarkRepository,
)
from memory.application.history.watermarks import SweepWatermarks
from memory.application.policy.ports import PolicyProjector
from memory.infrastructure.access.key_store import PostgresKeyStore
from memory.infrastructure.audit.audit_log import PostgresAuditTrail
from memory.infrastructure.history.chat_events import PostgresChatEventLog
from memory.infrastructure.history.embeddings import PostgresWindowEmbeddings
from memory.infrastructure.history.erasure import PostgresErasure
from memory.infrastructure.history.feature_flags import PostgresFeatureFlags
from memory.infrastructure.history.org_directory import PostgresOrgDirectory
from memory.infrastructure.history.partition_locks import AdvisoryPartitionLocks
from memory.infrastructure.history.retention import PostgresRetention
from memory.infrastructure.history.sweep_schedule import PostgresSweepSchedule
from memory.infrastructure.history.watermark_store import open_sweep_watermarks
from memory.infrastructure.policy.event_store import EventSourcedPolicyLog
from memory.infrastructure.policy.model_objects import ModelObjects
from memory.infrastructure.policy.model_store import PostgresPolicyModelStore
from memory.infrastructure.policy.progress import ProjectionProgress, TrackingWaiter
from memory.infrastructure.policy.projector import PolicyProjector as PostgresPolicyProjector
from memory.infrastructure.policy.projector import read_tracking_position
from memory.infrastructure.policy.read_model import PostgresPolicyReadModel
from memory.infrastructure.policy.similarity_distribution import (
    PostgresPolicySimilarityDistribution,
)
from memory.infrastructure.policy.view import PostgresPolicyEmbeddingsView
from memory.infrastructure.postgres.database import Database
from memory.infrastructure.postgres.event_store import EventStoreConnection

IMPLEMENTATIONS = ["in_memory", "postgres"]


@pytest.fixture(params=IMPLEMENTATIONS)
def implementation(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def database(implementation: str, request: pytest.FixtureRequest) -> Iterator[Database | None]:
    """A migrated database of its own for the PostgreSQL side (None for the fake's)."""
    if implementation == "in_memory":
        yield None
        return
    with migrated_database(request.getfixturevalue("database_url"), max_size=4) as database:
        yield database


@pytest.fixture
def policy_table(database: Database | None) -> Iterator[PolicyTable]:
    if database is None:
        table = InMemoryPolicyTable()
        yield PolicyTable(
            InMemoryPolicyView(table),
            InMemoryPolicyReadModel(table, POLICY_MODEL),
            InMemoryPolicySimilarityDistribution(table, POLICY_MODEL),
        )
        return
    datastore = EventStoreConnection.for_database(database).datastore()
    view = PostgresPolicyEmbeddingsView(
        datastore, tracking_table_name=ModelObjects(POLICY_MODEL).tracking_table
    )
    view.create_table()
    try:
        yield PolicyTable(
            view,
            # Exact mode: the fake's (the HNSW mode's recall is the benchmarks' business).
            PostgresPolicyReadModel(database, POLICY_MODEL, mode="exact"),
            PostgresPolicySimilarityDistribution(database, POLICY_MODEL),
        )
    finally:
        datastore.close()


@pytest.fixture
def history_stores(database: Database | None) -> HistoryStores:
    if database is None:
        events = InMemoryChatEventLog()
        windows = InMemoryWindowEmbeddings(events)
        return HistoryStores(events, windows, InMemoryRetention(events, windows), events)
    log = PostgresChatEventLog(database)
    return HistoryStores(log, PostgresWindowEmbeddings(database), PostgresRetention(database), log)


@pytest.fixture
def new_projector(database: Database | None) -> Iterator[Callable[[], PolicyProjector]]:
    """Projectors of the active model as separate processes would build them, sharing one
    database (its lease)."""
    if database is None:
        policy = InMemoryPolicy.create()
        yield policy.new_projector
        return
    log = EventSourcedPolicyLog.open(database)
    made: list[PostgresPolicyProjector] = []

    def make() -> PolicyProjector:
        made.append(PostgresPolicyProjector(database, FakeModel(), log))
        return made[-1]

    try:
        yield make
    finally:
        for projector in made:
            projector.stop()
        log.close()


@pytest.fixture
def model_store(database: Database | None) -> Iterator[ModelStoreSide]:
    """The policy model store and the event log it replays (for a re-embed, a model spec
    becomes a `FakeModel` of that id)."""
    if database is None:
        policy = InMemoryPolicy.create()
        yield ModelStoreSide(policy.log, policy.models)
        return
    log = EventSourcedPolicyLog.open(database)
    try:
        yield ModelStoreSide(
            log, PostgresPolicyModelStore(database, log, lambda spec: FakeModel(spec.strip()))
        )
    finally:
        log.close()


@pytest.fixture
def partition_locks(database: Database | None) -> PartitionLockFactory:
    if database is None:
        return InMemoryPartitionLocks()
    return AdvisoryPartitionLocks(database.direct_url, wait_timeout=0.2)


@pytest.fixture
def flag_store(database: Database | None) -> FeatureFlagStore:
    return InMemoryFeatureFlags() if database is None else PostgresFeatureFlags(database)


@pytest.fixture
def audit_trail(database: Database | None) -> AuditTrail:
    return InMemoryAuditTrail() if database is None else PostgresAuditTrail(database)


@pytest.fixture
def key_store(database: Database | None) -> KeyStore:
    return InMemoryKeyStore() if database is None else PostgresKeyStore(database)


@pytest.fixture
def history(database: Database | None) -> HistoryAdapters:
    if database is None:
        fakes = InMemoryHistory.create()
        return HistoryAdapters(
            fakes.events,
            fakes.windows,
            fakes.flags,
            fakes.retention,
            fakes.erasure,
            fakes.directory,
            fakes.schedule,
        )
    return HistoryAdapters(
        PostgresChatEventLog(database),
        PostgresWindowEmbeddings(database),
        PostgresFeatureFlags(database),
        PostgresRetention(database),
        PostgresErasure(database),
        PostgresOrgDirectory(database),
        PostgresSweepSchedule(database),
    )


@pytest.fixture
def watermarks(database: Database | None) -> Iterator[WatermarkRepository]:
    """The in-memory records (what `InMemoryHistory` uses) or the PostgreSQL table of
    docs/adr/0148."""
    store = SweepWatermarks() if database is None else open_sweep_watermarks(database)
    try:
        yield store
    finally:
        store.close()


@pytest.fixture
def waiter_side(database: Database | None) -> Iterator[WaiterSide]:
    """In memory a running projector is the waiter's projection running on demand (`paused`
    while none runs); in PostgreSQL a real projector, whose progress the waiter reads from
    the tracking table as a writer in another process does."""
    if database is None:
        policy = InMemoryPolicy.create()
        policy.waiter.paused = True

        def run_in_memory(running: bool) -> None:
            policy.waiter.paused = not running

        yield WaiterSide(policy.log, policy.waiter, policy.read_model, run_in_memory)
        return
    log = EventSourcedPolicyLog.open(database)
    model = FakeModel()
    projectors: list[PostgresPolicyProjector] = []

    def run(running: bool) -> None:
        if running:
            projectors.append(PostgresPolicyProjector(database, model, log))
            assert projectors[-1].try_start()
        else:
            for projector in projectors:
                projector.stop()
            projectors.clear()

    waiter = TrackingWaiter(
        ProjectionProgress(), lambda: read_tracking_position(database, model.identity.id)
    )
    try:
        yield WaiterSide(
            log,
            waiter,
            PostgresPolicyReadModel(database, model.identity.id, mode="exact"),
            run,
        )
    finally:
        run(False)
        log.close()


@pytest.fixture
def policy_log(database: Database | None) -> Iterator[PolicyLogSide]:
    """The log over the library's in-memory store (`InMemoryPolicy`'s) or over PostgreSQL,
    where a save inside the audit trail's transaction joins it."""
    if database is None:
        policy = InMemoryPolicy.create()
        yield PolicyLogSide(policy.log, policy.log, InMemoryAuditTrail())
        return
    log = EventSourcedPolicyLog.open(database)
    try:
        yield PolicyLogSide(log, log, PostgresAuditTrail(database))
    finally:
        log.close()
