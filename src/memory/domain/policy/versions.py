"""A policy's version history, read from its events."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from uuid import UUID

from memory.domain.policy.aggregate import PolicyEmbedding
from memory.domain.policy.content import content_sha256
from memory.domain.policy.embedding_ref import embedding_ref_for
from memory.domain.policy.metadata import PolicyMetadata


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
    searchable."""

    version: int
    embedding_ref: UUID
    model: str
    content_sha256: str
    metadata: PolicyMetadata
    recorded_at: datetime
    change: VersionChange


def version_history(events: Iterable[PolicyEmbedding.Event]) -> list[PolicyVersion]:
    versions: list[PolicyVersion] = []
    model, sha, metadata = "", "", "{}"
    for e in events:
        ref = embedding_ref_for(e.originator_id)
        if isinstance(
            e,
            PolicyEmbedding.Stored | PolicyEmbedding.StoredAgain | PolicyEmbedding.ContentUpdated,
        ):
            model, sha = e.model, content_sha256(e.content)
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
            )
        )
    return versions
