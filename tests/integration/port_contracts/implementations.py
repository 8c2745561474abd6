"""What the port contract fixtures give a case: the ports of one implementation, fake or
PostgreSQL (conftest.py builds them)."""

from __future__ import annotations

from dataclasses import dataclass

from memory.application.history.ports import ChatEventLog, RetentionStore, WindowEmbeddings
from memory.application.policy.ports import (
    PolicyEventLog,
    PolicyModelStore,
    PolicyReadModel,
    PolicySimilarityDistribution,
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


@dataclass
class ModelStoreSide:
    log: PolicyEventLog
    models: PolicyModelStore
