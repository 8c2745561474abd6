"""The projection that keeps `policy_embeddings` for one model.

It reads every `PolicyEmbedding` event in log order and writes the row of that policy for
its model, recording its position in the same transaction (the view does both). The events
carry the vector computed by the model that was active when they were recorded; when that
is this projection's model the vector is used as is, otherwise (a model swap, a replay for a
new model) the content is embedded here with this projection's model, before the view opens
its transaction. During a replay, text that a later event already replaced is not embedded.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from eventsourcing.dispatch import singledispatchmethod
from eventsourcing.persistence import Tracking, TrackingRecorder
from eventsourcing.projection import Projection

from memory.application.embedding import EmbeddingModel, InputRejected
from memory.application.policy.ports import PolicyLogOutlook
from memory.domain.policy.aggregate import PolicyEmbedding
from memory.domain.policy.content import content_sha256
from memory.domain.policy.dimensionality import FixedDimensionality
from memory.domain.policy.embedding_ref import embedding_ref_for
from memory.domain.policy.metadata import PolicyMetadata
from memory.domain.policy.namespace import GLOBAL, PolicyNamespace

log = logging.getLogger(__name__)

ContentEvent = PolicyEmbedding.Stored | PolicyEmbedding.StoredAgain | PolicyEmbedding.ContentUpdated


@dataclass(frozen=True)
class PolicyRow:
    """One row of `policy_embeddings`: a policy's current version in one model's space."""

    embedding_ref: UUID
    model: str
    policy_id: str
    version: int
    vector: Sequence[float]
    metadata: PolicyMetadata
    content: str
    content_sha256: str
    created_at: datetime
    updated_at: datetime
    namespace: PolicyNamespace = GLOBAL


@dataclass(frozen=True)
class MetadataRevision:
    embedding_ref: UUID
    model: str
    version: int
    metadata: PolicyMetadata
    updated_at: datetime


class PolicyEmbeddingsView(TrackingRecorder, ABC):
    """The read model as the projection writes it: each method writes and records the
    tracking position in one transaction."""

    @abstractmethod
    def upsert_row(self, row: PolicyRow, tracking: Tracking) -> None:
        """Insert or replace the (policy, model) row unless it already has a newer version."""

    @abstractmethod
    def revise_metadata(self, revision: MetadataRevision, tracking: Tracking) -> None:
        """Update metadata of an existing (policy, model) row; no row, no change."""

    @abstractmethod
    def remove_row(self, embedding_ref: UUID, model: str, tracking: Tracking) -> None:
        """Delete the (policy, model) row if there is one."""

    @abstractmethod
    def remove_deleted(self, embedding_ref: UUID, version: int, tracking: Tracking) -> None:
        """Delete the policy's rows of every model older than the deletion's `version` (a
        newer row is a later store of the same id, projected already by another model)."""


class PolicyEmbeddingsProjection(Projection[PolicyEmbeddingsView]):
    def __init__(
        self, view: PolicyEmbeddingsView, model: EmbeddingModel, outlook: PolicyLogOutlook
    ) -> None:
        super().__init__(view)
        FixedDimensionality.check_model(model.identity)
        self.model = model
        self.outlook = outlook
        self.embedded_texts = 0

    @property
    def model_id(self) -> str:
        return self.model.identity.id

    @singledispatchmethod
    def process_event(self, domain_event: Any, tracking: Tracking) -> None:
        # Events of other kinds still move the position, so that lag is measured in events.
        self.view.insert_tracking(tracking)

    @process_event.register
    def _stored(self, domain_event: PolicyEmbedding.Stored, tracking: Tracking) -> None:
        self._project_content(domain_event, domain_event.timestamp, tracking)

    @process_event.register
    def _content_updated(
        self, domain_event: PolicyEmbedding.ContentUpdated, tracking: Tracking
    ) -> None:
        self._project_content(domain_event, domain_event.stored_at, tracking)

    @process_event.register
    def _stored_again(self, domain_event: PolicyEmbedding.StoredAgain, tracking: Tracking) -> None:
        self._project_content(domain_event, domain_event.timestamp, tracking)

    @process_event.register
    def _deleted(self, domain_event: PolicyEmbedding.Deleted, tracking: Tracking) -> None:
        self.view.remove_deleted(
            embedding_ref_for(domain_event.originator_id),
            domain_event.originator_version,
            tracking,
        )

    @process_event.register
    def _metadata_updated(
        self, domain_event: PolicyEmbedding.MetadataUpdated, tracking: Tracking
    ) -> None:
        revision = MetadataRevision(
            embedding_ref=embedding_ref_for(domain_event.originator_id),
            model=self.model_id,
            version=domain_event.originator_version,
            metadata=PolicyMetadata.from_canonical(domain_event.metadata),
            updated_at=domain_event.timestamp,
        )
        self.view.revise_metadata(revision, tracking)

    def _project_content(
        self,
        event: PolicyEmbedding.Stored
        | PolicyEmbedding.StoredAgain
        | PolicyEmbedding.ContentUpdated,
        created_at: datetime,
        tracking: Tracking,
    ) -> None:
        ref = embedding_ref_for(event.originator_id)
        if event.model == self.model_id:
            vector: Sequence[float] = event.vector
        elif self.outlook.has_later_content(event.originator_id, event.originator_version):
            # Replaying: a later event replaces or deletes this text, so embedding it would be
            # wasted (and a deleted text must not come back).
            self.view.insert_tracking(tracking)
            return
        else:
            try:
                vector = self._embed(event.content)
            except InputRejected as exc:
                # One unembeddable text must not stop the projection for every other policy;
                # its older row (older text) must not stay searchable either.
                log.error(
                    "model %s refused policy %s version %d; it is left out of this model's "
                    "search until its content changes: %s",
                    self.model_id,
                    event.policy_id,
                    event.originator_version,
                    exc,
                )
                self.view.remove_row(ref, self.model_id, tracking)
                return
        row = PolicyRow(
            embedding_ref=ref,
            model=self.model_id,
            policy_id=event.policy_id,
            version=event.originator_version,
            vector=vector,
            metadata=PolicyMetadata.from_canonical(event.metadata),
            content=event.content,
            content_sha256=content_sha256(event.content),
            created_at=created_at,
            updated_at=event.timestamp,
            namespace=PolicyNamespace(event.org_id),
        )
        self.view.upsert_row(row, tracking)

    def _embed(self, text: str) -> tuple[float, ...]:
        (vector,) = self.model.embed_documents([text])
        self.embedded_texts += 1
        return FixedDimensionality.check_vector(self.model.identity, vector).values
