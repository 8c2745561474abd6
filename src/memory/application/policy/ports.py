"""What the policy use cases need from the outside world, as protocols."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol
from uuid import UUID

from memory.domain.embedding import EmbeddingVector
from memory.domain.errors import DomainError
from memory.domain.policy.aggregate import PolicyEmbedding
from memory.domain.policy.cursor import SearchCursor
from memory.domain.policy.listing import ListPosition, ListRequest, StoredPolicy
from memory.domain.policy.namespace import PolicyAddress, PolicyNamespace
from memory.domain.policy.search import PolicyDocument, SearchRequest, SimilarityResult
from memory.domain.relevance import QueryDistribution


class RecordConflict(Exception):
    """Another writer recorded an event for the same policy first (a concurrent store of the
    same id, or a concurrent update)."""


class PolicyEventLog(Protocol):
    """The event store of `PolicyEmbedding` aggregates."""

    def get(self, address: PolicyAddress) -> PolicyEmbedding | None: ...

    def events(self, address: PolicyAddress) -> list[PolicyEmbedding.Event]: ...

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


@dataclass(frozen=True)
class PolicyRows:
    policies: Sequence[StoredPolicy]
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
        or above the threshold, matching the filter, in the namespaces of `request.view`,
        after `after` or skipping `request.page.offset`. Raises `DeadlineExceeded` after
        `timeout` seconds."""
        ...

    def get(
        self,
        embedding_ref: UUID,
        query: EmbeddingVector | None,
        timeout: float,
        view: Sequence[PolicyNamespace],
    ) -> PolicyDocument | None:
        """The row for `embedding_ref` if it is in one of the namespaces of `view`, with its
        similarity to `query` when given."""
        ...

    def list_policies(
        self, request: ListRequest, after: ListPosition | None, timeout: float
    ) -> PolicyRows:
        """Up to `request.limit` rows of the namespaces of `request.view`, newest
        `updated_at` first (ties by embedding_ref descending), strictly after `after`."""
        ...


class ProjectionBusy(DomainError):
    """Another process runs this model's projector (a `memory serve` with this model, or a
    `reembed`)."""

    code = "projection_busy"


class ProjectorFailed(DomainError):
    """A projection's processing stopped with an error; it restarts from its position."""

    code = "projector_failed"


@dataclass(frozen=True, slots=True)
class ReembedReport:
    model: str
    started_at: int | None
    reached: int | None
    head: int | None
    texts_embedded: int
    rows_removed: int


@dataclass(frozen=True, slots=True)
class StoredModel:
    """A model the read model has rows of (or the active one), and how far its projection
    got."""

    model: str
    rows: int
    position: int | None
    active: bool


@dataclass(frozen=True, slots=True)
class TrackingTable:
    """A projection's tracking table. `model` is None when the table cannot be tied to a
    model: one a re-embed left behind before tables were labelled with their model."""

    table: str
    model: str | None


# (position reached, log head the replay runs to); both None for an empty log.
ReembedProgress = Callable[[int | None, int | None], None]


class PolicyModelStore(Protocol):
    """Operator actions on one model's rows of the read model (model swaps)."""

    def stored_id(self, spec: str) -> str:
        """The identity a model spec's rows are stored under (docs/adr/0010)."""
        ...

    def head(self) -> int | None: ...

    def rows_per_model(self) -> dict[str, int]: ...

    def position(self, model_id: str) -> int | None:
        """How far `model_id`'s projection got (None: it never ran)."""
        ...

    def drop(self, model_id: str) -> int:
        """Delete the model's rows, index and position; the number of rows. Raises
        `ProjectionBusy` while its projector runs."""
        ...

    def tracking_tables(self, known_models: Sequence[str]) -> list[TrackingTable]:
        """Every projection tracking table in the database, each tied to its model where
        possible (`known_models` names models whose tables may predate the label)."""
        ...

    def drop_tracking_table(self, table: str) -> None:
        """Drop a tracking table no model can be tied to."""
        ...

    def reembed(
        self, spec: str, *, rebuild: bool, on_progress: ReembedProgress | None
    ) -> ReembedReport:
        """Replay the log into `spec`'s rows until they reach the head (resumable)."""
        ...


class PolicySimilarityDistribution(Protocol):
    """How similar a query is to the policies a search reads (for relevance,
    memory.domain.relevance): per script group, over the active model's rows in the
    namespaces of `view`, or a fixed sample of them when there are many."""

    def distribution(
        self, vector: EmbeddingVector, view: Sequence[PolicyNamespace], timeout: float
    ) -> QueryDistribution: ...


class PolicyProjector(Protocol):
    """One run of the active model's projection in this process, under the model's lease
    (one process at a time projects a model; the others stand by)."""

    def try_start(self) -> bool:
        """Take the lease and start processing; False while another process holds it."""
        ...

    def lease_alive(self) -> bool:
        """Whether the lease is still held (its connection is up)."""
        ...

    def check(self) -> None:
        """Raise `ProjectorFailed` if processing stopped or the lease was lost."""
        ...

    def stop(self) -> None:
        """Stop processing and release the lease (idempotent)."""
        ...


# A fresh, not yet started projector of the active model (one per attempt to lead).
ProjectorFactory = Callable[[], PolicyProjector]
