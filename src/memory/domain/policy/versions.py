"""A policy's version history, read from its events."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from uuid import UUID

from memory.domain.audit.admin_action import Actor
from memory.domain.policy.aggregate import PolicyEmbedding
from memory.domain.policy.content import content_sha256
from memory.domain.policy.embedding_ref import embedding_ref_for
from memory.domain.policy.metadata import PolicyMetadata
from memory.domain.policy.namespace import GLOBAL, PolicyNamespace


class VersionChange(StrEnum):
    STORED = "stored"
    CONTENT = "content"
    METADATA = "metadata"
    DELETED = "deleted"


@dataclass(frozen=True)
class PolicyVersion:
    """One version: the vector it searches with (`model`; a metadata-only version keeps the
    previous one), the content it was made from (`content_sha256`) and its metadata. A
    deletion is a version too: it repeats the last model, hash and metadata, and is not
    searchable. `actor`: who made the change, None for a version recorded before changes
    named their actor (docs/adr/0103)."""

    version: int
    embedding_ref: UUID
    model: str
    content_sha256: str
    metadata: PolicyMetadata
    recorded_at: datetime
    change: VersionChange
    actor: Actor | None = None
    namespace: PolicyNamespace = GLOBAL


def actor_of_event(e: PolicyEmbedding.Event) -> Actor | None:
    key_id = getattr(e, "actor_key_id", None)
    name = getattr(e, "actor_name", None)
    return None if key_id is None else Actor(key_id, name or "")


def version_history(events: Iterable[PolicyEmbedding.Event]) -> list[PolicyVersion]:
    versions: list[PolicyVersion] = []
    model, sha, metadata = "", "", "{}"
    namespace = GLOBAL
    for e in events:
        ref = embedding_ref_for(e.originator_id)
        if isinstance(
            e,
            PolicyEmbedding.Stored | PolicyEmbedding.StoredAgain | PolicyEmbedding.ContentUpdated,
        ):
            model, sha = e.model, content_sha256(e.content)
            namespace = PolicyNamespace(e.org_id)
            change = (
                VersionChange.CONTENT
                if isinstance(e, PolicyEmbedding.ContentUpdated)
                else VersionChange.STORED
            )
            metadata = e.metadata
        elif isinstance(e, PolicyEmbedding.MetadataUpdated):
            change, metadata = VersionChange.METADATA, e.metadata
        elif isinstance(e, PolicyEmbedding.Deleted):
            change = VersionChange.DELETED
        else:
            continue
        versions.append(
            PolicyVersion(
                version=e.originator_version,
                embedding_ref=ref,
                model=model,
                content_sha256=sha,
                metadata=PolicyMetadata.from_canonical(metadata),
                recorded_at=e.timestamp,
                change=change,
                actor=actor_of_event(e),
                namespace=namespace,
            )
        )
    return versions
