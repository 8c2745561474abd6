"""Listing stored policies: newest first, keyset pages.

A page ends at a (updated_at, embedding_ref) position; the next page starts strictly after
it, so rows written while a client pages never shift the pages it has not read yet (an
updated policy moves to the front and is not seen twice). The position travels in the same
signed cursor as a search's (`CursorCodec`), the time as integer microseconds since the
epoch in its number field (exact in a float up to the year 2255), bound to the listing's
filters by a fingerprint of its own.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from uuid import UUID

from memory.domain.errors import FieldChecks, InvalidInput
from memory.domain.policy.cursor import SearchCursor
from memory.domain.policy.metadata import PolicyMetadata
from memory.domain.policy.namespace import GLOBAL, PolicyNamespace
from memory.domain.policy.pagination import DEFAULT_LIMIT, MAX_LIMIT
from memory.domain.time_range import AcceptedTimeRange

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


@dataclass(frozen=True)
class StoredPolicy:
    """A policy's current version: what `GET /v1/policies/{policy_id}` answers and what a
    listing holds. `stored_at` is when its current history began (the first store, or the
    store after a deletion), `updated_at` when its current version was recorded."""

    policy_id: str
    embedding_ref: UUID
    version: int
    content: str
    metadata: PolicyMetadata
    model: str
    stored_at: datetime
    updated_at: datetime
    namespace: PolicyNamespace = GLOBAL


@dataclass(frozen=True, slots=True)
class ListPosition:
    """Where a listing page ended."""

    updated_at: datetime
    embedding_ref: UUID

    def to_cursor(self, fingerprint: str) -> SearchCursor:
        micros = (self.updated_at - _EPOCH) // _MICROSECOND
        return SearchCursor(float(micros), self.embedding_ref, fingerprint)

    @classmethod
    def from_cursor(cls, cursor: SearchCursor) -> ListPosition:
        micros = cursor.distance
        if not micros.is_integer():
            raise InvalidInput("cursor", "is malformed")
        try:
            updated_at = _EPOCH + timedelta(microseconds=int(micros))
        except OverflowError:
            raise InvalidInput("cursor", "is malformed") from None
        return cls(updated_at, cursor.embedding_ref)


@dataclass(frozen=True)
class ListRequest:
    limit: int
    source: str | None
    tag: str | None
    updated_since: datetime | None
    # The namespaces listed (docs/adr/0102), as `SearchRequest.view`.
    view: tuple[PolicyNamespace, ...] = (GLOBAL,)

    @classmethod
    def parse(
        cls,
        *,
        limit: int | None,
        cursor: str | None = None,
        source: str | None,
        tag: str | None,
        updated_since: datetime | None,
        accepted: AcceptedTimeRange,
    ) -> ListRequest:
        checks = FieldChecks()
        size = DEFAULT_LIMIT if limit is None else limit
        if not 1 <= size <= MAX_LIMIT:
            checks.fail("limit", f"must be between 1 and {MAX_LIMIT}, got {size}")
        for field, value in (("source", source), ("tag", tag)):
            if value is not None and not value.strip():
                checks.fail(field, "must not be empty")
        if updated_since is not None:
            checks.run(partial(accepted.check, updated_since, "updated_since"))
        if cursor is not None and not cursor:
            checks.fail("cursor", "must not be empty")
        checks.raise_any()
        return cls(size, source, tag, updated_since)

    def fingerprint(self, model_id: str) -> str:
        """What makes two requests pages of the same listing (the limit may change)."""
        since = None if self.updated_since is None else self.updated_since.isoformat()
        parts: list[object] = ["list", model_id, self.source, self.tag, since]
        if self.view != (GLOBAL,):
            parts.append([n.text for n in self.view])
        identity = json.dumps(parts)
        return hashlib.sha256(identity.encode("utf-8")).hexdigest()[:32]
