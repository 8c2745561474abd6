"""`PolicyEmbedding`: one policy's text, metadata and the vector computed from it, as an
event-sourced aggregate. Its events are the version history and the source of truth; the
searchable table is a projection of them.

Each event names its actor (who made the change: an API key's id and name, the operator at
the command line, or an in-process caller) and each event that carries content names the
policy's namespace (`org_id`, None for a global policy). Events recorded before either
existed are upcast with None for both: a global policy, an unknown actor (docs/adr/0102,
docs/adr/0103).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from memory.domain.audit.admin_action import Actor
from memory.domain.embedding import EmbeddingVector, ModelIdentity
from memory.domain.policy.content import PolicyContent, content_sha256
from memory.domain.policy.dimensionality import FixedDimensionality
from memory.domain.policy.metadata import PolicyMetadata
from memory.domain.policy.namespace import (
    POLICY_NAMESPACE,
    PolicyAddress,
    PolicyNamespace,
    policy_aggregate_id,
)

__all__ = ["POLICY_NAMESPACE", "PolicyEmbedding"]


def _unknown_actor(state: dict[str, Any]) -> None:
    state["actor_key_id"] = None
    state["actor_name"] = None


def _global_with_unknown_actor(state: dict[str, Any]) -> None:
    state["org_id"] = None
    _unknown_actor(state)


class PolicyEmbedding(Aggregate):
    """Events carry plain JSON types only (str, int, list[float], datetime), so the library's
    default JSON transcoder stores them; metadata travels as canonical JSON text so that no
    client-chosen object can be mistaken for a transcoded value (see docs/adr/0021)."""

    class Stored(Aggregate.Created):
        class_version = 2

        policy_id: str
        content: str
        metadata: str
        model: str
        dimensions: int
        vector: list[float]
        org_id: str | None
        actor_key_id: str | None
        actor_name: str | None

        upcast_v1_v2 = staticmethod(_global_with_unknown_actor)

    class ContentUpdated(Aggregate.Event):
        """New text and its new vector. Carries everything a read-model row needs (policy id,
        namespace, first-stored time, metadata), so a projection never has to look
        backwards."""

        class_version = 2

        policy_id: str
        stored_at: datetime
        content: str
        metadata: str
        model: str
        dimensions: int
        vector: list[float]
        org_id: str | None
        actor_key_id: str | None
        actor_name: str | None

        upcast_v1_v2 = staticmethod(_global_with_unknown_actor)

    class MetadataUpdated(Aggregate.Event):
        """Metadata changed, text did not: nothing is re-embedded, the vector stays."""

        class_version = 2

        metadata: str
        actor_key_id: str | None
        actor_name: str | None

        upcast_v1_v2 = staticmethod(_unknown_actor)

    class Deleted(Aggregate.Event):
        """The policy is gone: every model's row of it leaves the read model. The events
        stay (the history shows the deletion); storing the id again continues this
        aggregate with `StoredAgain` (docs/adr/0063)."""

        class_version = 2

        actor_key_id: str | None
        actor_name: str | None

        upcast_v1_v2 = staticmethod(_unknown_actor)

    class StoredAgain(Aggregate.Event):
        """A deleted policy's id stored anew: a new first-stored time (`stored_at` is this
        event's own time), versions continue after the deletion's."""

        class_version = 2

        policy_id: str
        content: str
        metadata: str
        model: str
        dimensions: int
        vector: list[float]
        org_id: str | None
        actor_key_id: str | None
        actor_name: str | None

        upcast_v1_v2 = staticmethod(_global_with_unknown_actor)

    @staticmethod
    def create_id(policy_id: str, org_id: str | None) -> UUID:
        return policy_aggregate_id(policy_id, org_id)

    @classmethod
    def store(
        cls,
        address: PolicyAddress,
        content: PolicyContent,
        metadata: PolicyMetadata,
        model: ModelIdentity,
        vector: EmbeddingVector,
        *,
        actor: Actor,
    ) -> PolicyEmbedding:
        FixedDimensionality.check_vector(model, vector)
        return cls(
            policy_id=address.policy_id.value,
            content=content.text,
            metadata=metadata.canonical(),
            model=model.id,
            dimensions=vector.dimensions,
            vector=list(vector.values),
            org_id=address.namespace.org_id,
            actor_key_id=actor.key_id,
            actor_name=actor.name,
        )

    @event(Stored)
    def __init__(
        self,
        policy_id: str,
        content: str,
        metadata: str,
        model: str,
        dimensions: int,
        vector: list[float],
        org_id: str | None,
        actor_key_id: str | None,
        actor_name: str | None,
    ) -> None:
        self.policy_id = policy_id
        self.org_id = org_id
        self.deleted = False
        self._stored_at: datetime | None = self.created_on
        self._apply_content(content, metadata, model, vector)

    @property
    def namespace(self) -> PolicyNamespace:
        return PolicyNamespace(self.org_id)

    def delete(self, *, actor: Actor) -> None:
        if self.deleted:
            raise ValueError("policy is already deleted")
        self._delete(actor_key_id=actor.key_id, actor_name=actor.name)

    def store_again(
        self,
        content: PolicyContent,
        metadata: PolicyMetadata,
        model: ModelIdentity,
        vector: EmbeddingVector,
        *,
        actor: Actor,
    ) -> None:
        if not self.deleted:
            raise ValueError("policy exists; update it instead")
        FixedDimensionality.check_vector(model, vector)
        self._store_again(
            policy_id=self.policy_id,
            content=content.text,
            metadata=metadata.canonical(),
            model=model.id,
            dimensions=vector.dimensions,
            vector=list(vector.values),
            org_id=self.org_id,
            actor_key_id=actor.key_id,
            actor_name=actor.name,
        )

    @event(Deleted)
    def _delete(self, actor_key_id: str | None, actor_name: str | None) -> None:
        self._pin_stored_at()
        self.deleted = True

    @event(StoredAgain)
    def _store_again(
        self,
        policy_id: str,
        content: str,
        metadata: str,
        model: str,
        dimensions: int,
        vector: list[float],
        org_id: str | None,
        actor_key_id: str | None,
        actor_name: str | None,
    ) -> None:
        self.deleted = False
        # The library sets `modified_on` to this event's time only after this method runs;
        # `stored_at` reads it until the next event pins it.
        self._stored_at = None
        self._apply_content(content, metadata, model, vector)

    def has_new_content(self, content: PolicyContent) -> bool:
        return content.text != self.content

    def update_content(
        self,
        content: PolicyContent,
        metadata: PolicyMetadata,
        model: ModelIdentity,
        vector: EmbeddingVector,
        *,
        actor: Actor,
    ) -> None:
        if self.deleted:
            raise ValueError("policy is deleted")
        if not self.has_new_content(content):
            raise ValueError("content is unchanged; use update_metadata")
        FixedDimensionality.check_vector(model, vector)
        self._update_content(
            policy_id=self.policy_id,
            stored_at=self.stored_at,
            content=content.text,
            metadata=metadata.canonical(),
            model=model.id,
            dimensions=vector.dimensions,
            vector=list(vector.values),
            org_id=self.org_id,
            actor_key_id=actor.key_id,
            actor_name=actor.name,
        )

    def update_metadata(self, metadata: PolicyMetadata, *, actor: Actor) -> bool:
        """Record new metadata; False (and no event) when it equals the current one."""
        if self.deleted:
            raise ValueError("policy is deleted")
        canonical = metadata.canonical()
        if canonical == self.metadata_json:
            return False
        self._update_metadata(metadata=canonical, actor_key_id=actor.key_id, actor_name=actor.name)
        return True

    @event(ContentUpdated)
    def _update_content(
        self,
        policy_id: str,
        stored_at: datetime,
        content: str,
        metadata: str,
        model: str,
        dimensions: int,
        vector: list[float],
        org_id: str | None,
        actor_key_id: str | None,
        actor_name: str | None,
    ) -> None:
        self._pin_stored_at()
        self._apply_content(content, metadata, model, vector)

    @event(MetadataUpdated)
    def _update_metadata(
        self, metadata: str, actor_key_id: str | None, actor_name: str | None
    ) -> None:
        self._pin_stored_at()
        self.metadata_json = metadata

    def _pin_stored_at(self) -> None:
        self._stored_at = self.stored_at

    @property
    def stored_at(self) -> datetime:
        """When the current history began: the first store, or the latest store after a
        deletion."""
        return self.modified_on if self._stored_at is None else self._stored_at

    def _apply_content(self, content: str, metadata: str, model: str, vector: list[float]) -> None:
        self.content = content
        self.metadata_json = metadata
        self.model = model
        self.vector = vector

    @property
    def metadata(self) -> PolicyMetadata:
        return PolicyMetadata.from_canonical(self.metadata_json)

    @property
    def content_sha256(self) -> str:
        return content_sha256(self.content)
