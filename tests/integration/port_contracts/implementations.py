"""What the port contract fixtures give a case: the ports of one implementation, fake or
PostgreSQL (conftest.py builds them)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from memory.application.audit.ports import AuditTrail
from memory.application.history.erasure import ErasureStore
from memory.application.history.ports import (
    ChatEventLog,
    FeatureFlagStore,
    FullTextIndex,
    OrgDirectoryStore,
    RetentionStore,
    SweepSchedule,
    WindowEmbeddings,
)
from memory.application.policy.ports import (
    PolicyEventLog,
    PolicyLogOutlook,
    PolicyModelStore,
    PolicyReadModel,
    PolicySimilarityDistribution,
    ProjectionWaiter,
)
from memory.application.policy.projection import PolicyEmbeddingsView

# The model the policy cases write and read (the read model's column is 384 dimensions).
POLICY_MODEL = "hash:384"


@dataclass
class PolicyTable:
    """`policy_embeddings` as the projection writes it (`view`, for one model's tracking)
    and as searches read it."""

    view: PolicyEmbeddingsView
    read_model: PolicyReadModel
    distribution: PolicySimilarityDistribution


@dataclass
class HistoryStores:
    events: ChatEventLog
    windows: WindowEmbeddings
    retention: RetentionStore
    # The event log's full-text index, as re-indexing sees it (the same object).
    index: FullTextIndex


@dataclass
class ModelStoreSide:
    log: PolicyEventLog
    models: PolicyModelStore


@dataclass
class HistoryAdapters:
    """Every history store that ingest, the sweep's schedule, the org directory and erasure
    share, wired as the service wires them (ingest marks the schedule's work)."""

    events: ChatEventLog
    windows: WindowEmbeddings
    flags: FeatureFlagStore
    retention: RetentionStore
    erasure: ErasureStore
    directory: OrgDirectoryStore
    schedule: SweepSchedule


@dataclass
class WaiterSide:
    """A writer's view of the policy projection: the log it records to, the waiter it waits
    with, the read model it then reads, and `run_projector(True/False)`: whether a projector
    of the active model is running (in this process or another)."""

    log: PolicyEventLog
    waiter: ProjectionWaiter
    read_model: PolicyReadModel
    run_projector: Callable[[bool], None]


@dataclass
class PolicyLogSide:
    """The policy event log (and its outlook, the same object), with the audit trail whose
    change a save may be part of (a deletion commits with its audit event, docs/adr/0079)."""

    log: PolicyEventLog
    outlook: PolicyLogOutlook
    audit: AuditTrail
