"""The org directory: every org the history context knows, a keyset page at a time.

Pages are in byte order of org id and end at an org id; the next page starts strictly after
it, so orgs added while a client pages never shift the pages it has not read yet. The
position travels in a signed cursor bound to the listing's prefix by a fingerprint.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memory.domain.errors import InvalidInput
from memory.domain.history.chat_input import ORG_ID_PATTERN

DIRECTORY_LIMIT_DEFAULT = 50
DIRECTORY_LIMIT_MAX = 200
DIRECTORY_CURSOR_VERSION = 1
# A prefix of an org id is itself shaped like one (non-empty, same characters).
_PREFIX = re.compile(ORG_ID_PATTERN)


@dataclass(frozen=True, slots=True)
class OrgListing:
    """One page request. `visible`: the only orgs the caller may see (None: every org);
    it narrows the listing without changing its pages' positions."""

    limit: int
    prefix: str | None
    cursor: str | None
    visible: frozenset[str] | None = None

    @classmethod
    def parse(
        cls,
        *,
        limit: int | None = None,
        prefix: str | None = None,
        cursor: str | None = None,
        visible: frozenset[str] | None = None,
    ) -> OrgListing:
        size = DIRECTORY_LIMIT_DEFAULT if limit is None else limit
        if not 1 <= size <= DIRECTORY_LIMIT_MAX:
            raise InvalidInput("limit", f"must be between 1 and {DIRECTORY_LIMIT_MAX}, got {size}")
        if prefix is not None and _PREFIX.fullmatch(prefix) is None:
            raise InvalidInput(
                "prefix", "must be the start of an org id (letters, digits, '.', '_', ':', '-')"
            )
        if cursor is not None and not cursor:
            raise InvalidInput("cursor", "must not be empty")
        return cls(size, prefix, cursor, visible)

    def fingerprint(self) -> str:
        """What makes two requests pages of the same listing (the limit may change)."""
        identity = json.dumps(["orgs", self.prefix])
        return hashlib.sha256(identity.encode("utf-8")).hexdigest()[:32]


def prefix_range(prefix: str) -> tuple[str, str]:
    """[low, high) in byte order holding exactly the ids that start with `prefix` (its
    characters are ASCII, so the last one has a successor)."""
    return prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)


def position_payload(after: str, fingerprint: str) -> dict[str, Any]:
    """What a directory cursor signs: the last org id of the page and the listing."""
    return {"v": DIRECTORY_CURSOR_VERSION, "o": after, "f": fingerprint}


def position_from_payload(
    data: Mapping[str, Any], *, fingerprint: str, field: str = "cursor"
) -> str:
    """The org id a page ended at, from a cursor's signed payload."""
    after, version, bound_to = data.get("o"), data.get("v"), data.get("f")
    if version != DIRECTORY_CURSOR_VERSION or not isinstance(after, str):
        raise InvalidInput(field, "is malformed")
    if _PREFIX.fullmatch(after) is None:
        raise InvalidInput(field, "is malformed")
    if bound_to != fingerprint:
        raise InvalidInput(field, "belongs to a different listing (the prefix changed)")
    return after
