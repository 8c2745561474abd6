"""The partitions of one org, a keyset page at a time (the sweep status, docs/adr/0093).

Pages are in the order of (provider, channel id) and end at a partition; the next page
starts strictly after it, so partitions added while a client pages never shift the pages it
has not read yet, and a page costs the same at the first partition and the ten-thousandth.
The position travels in a signed cursor bound to the org by a fingerprint.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memory.domain.errors import InvalidInput

PARTITION_PAGE_DEFAULT = 50
PARTITION_PAGE_MAX = 200
PARTITION_CURSOR_VERSION = 1


@dataclass(frozen=True, slots=True, order=True)
class PartitionKey:
    """Where a page of an org's partitions ended (the org is the listing's)."""

    provider: str
    channel_id: str


@dataclass(frozen=True, slots=True)
class PartitionListing:
    """One page request: at most `limit` partitions of the org, after the cursor's."""

    limit: int
    cursor: str | None

    @classmethod
    def parse(cls, *, limit: int | None = None, cursor: str | None = None) -> PartitionListing:
        size = PARTITION_PAGE_DEFAULT if limit is None else limit
        if not 1 <= size <= PARTITION_PAGE_MAX:
            raise InvalidInput("limit", f"must be between 1 and {PARTITION_PAGE_MAX}, got {size}")
        if cursor is not None and not cursor:
            raise InvalidInput("cursor", "must not be empty")
        return cls(size, cursor)


def partition_fingerprint(org_id: str) -> str:
    """What makes two requests pages of the same listing: the org (the limit may change)."""
    identity = json.dumps(["sweep-partitions", org_id])
    return hashlib.sha256(identity.encode("utf-8")).hexdigest()[:32]


def partition_payload(after: PartitionKey, fingerprint: str) -> dict[str, Any]:
    """What a partition cursor signs: the last partition of the page and the listing."""
    return {
        "v": PARTITION_CURSOR_VERSION,
        "p": after.provider,
        "c": after.channel_id,
        "f": fingerprint,
    }


def partition_from_payload(
    data: Mapping[str, Any], *, fingerprint: str, field: str = "cursor"
) -> PartitionKey:
    """The partition a page ended at, from a cursor's signed payload."""
    provider, channel, version = data.get("p"), data.get("c"), data.get("v")
    if version != PARTITION_CURSOR_VERSION:
        raise InvalidInput(field, "is malformed")
    if not isinstance(provider, str) or not isinstance(channel, str):
        raise InvalidInput(field, "is malformed")
    if data.get("f") != fingerprint:
        raise InvalidInput(field, "belongs to a different listing (another org's partitions)")
    return PartitionKey(provider, channel)
