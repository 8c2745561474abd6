"""What the policy use cases need from the outside world, as protocols."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol
from uuid import UUID

from memory.domain.embedding import EmbeddingVector
from memory.domain.policy.aggregate import PolicyEmbedding
from memory.domain.policy.cursor import SearchCursor
from memory.domain.policy.policy_id import PolicyId
from memory.domain.policy.search import PolicyDocument, SearchRequest, SimilarityResult


class RecordConflict(Exception):
    """Another writer recorded an event for the same policy first (a concurrent store of the
    same id, or a concurrent update)."""


class PolicyEventLog(Protocol):
    """The event store of `PolicyEmbedding` aggregates."""

    def get(self, policy_id: PolicyId) -> PolicyEmbedding | None: ...

    def events(self, policy_id: PolicyId) -> list[PolicyEmbedding.Event]: ...

    def save(self, *aggregates: PolicyEmbedding) -> int:
        """Record pending events atomically; return the notification id of the last one.
        Raises `RecordConflict` if any version was recorded meanwhile."""
        ...

    def head(self) -> int | None:
        """Notification id of the newest recorded event, None for an empty log."""
        ...


class PolicyLogOutlook(Protocol):
    """Lets a replaying projection look ahead instead of embedding text that a later event
    already replaced."""

    def has_later_content(self, aggregate_id: UUID, version: int) -> bool: ...


class ProjectionWaiter(Protocol):
    def wait(self, notification_id: int, timeout: float) -> bool:
        """Block until the active model's projection has processed `notification_id`, at
        most `timeout` seconds. True if it has."""
        ...


@dataclass(frozen=True)
class ResultRows:
    results: Sequence[SimilarityResult]
    has_more: bool


class PolicyReadModel(Protocol):
    """The `policy_embeddings` table, read for one model."""

    @property
    def model_id(self) -> str: ...

    def search(
        self,
        vector: EmbeddingVector,
        request: SearchRequest,
        after: SearchCursor | None,
        timeout: float,
    ) -> ResultRows:
        """Up to `request.page.size` results in (similarity desc, embedding_ref) order, at
        or above the threshold, matching the filter, after `after` or skipping
        `request.page.offset`. Raises `DeadlineExceeded` after `timeout` seconds."""
        ...

    def get(
        self, embedding_ref: UUID, query: EmbeddingVector | None, timeout: float
    ) -> PolicyDocument | None:
        """The row for `embedding_ref`, with its similarity to `query` when given."""
        ...
