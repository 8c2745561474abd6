"""How much of a ranked result list one search answer holds, and where it starts."""

from __future__ import annotations

from dataclasses import dataclass

from memory.domain.errors import FieldChecks

DEFAULT_LIMIT = 50
MAX_LIMIT = 200
# Deep offsets make the index walk past every skipped row; beyond this, page with the cursor.
MAX_OFFSET = 10_000


@dataclass(frozen=True, slots=True)
class PageRequest:
    """`limit` is the page size (hard cap on results per answer); `max_results`, when given,
    caps one answer further and must not exceed `limit`. `offset` and `cursor` are
    alternatives; out-of-range values are refused, never clamped."""

    limit: int = DEFAULT_LIMIT
    offset: int = 0
    cursor: str | None = None
    max_results: int | None = None

    @classmethod
    def parse(
        cls,
        *,
        limit: int | None = None,
        offset: int | None = None,
        cursor: str | None = None,
        max_results: int | None = None,
    ) -> PageRequest:
        checks = FieldChecks()
        size = DEFAULT_LIMIT if limit is None else limit
        if not 1 <= size <= MAX_LIMIT:
            checks.fail("limit", f"must be between 1 and {MAX_LIMIT}, got {size}")
        if offset is not None and cursor is not None:
            checks.fail("cursor", "give either offset or cursor, not both")
        start = 0 if offset is None else offset
        if not 0 <= start <= MAX_OFFSET:
            checks.fail(
                "offset",
                f"must be between 0 and {MAX_OFFSET}, got {start}; page further with the cursor",
            )
        if cursor is not None and not cursor:
            checks.fail("cursor", "must not be empty")
        if max_results is not None and not 1 <= max_results <= min(size, MAX_LIMIT):
            checks.fail("max_results", f"must be between 1 and limit ({size}), got {max_results}")
        checks.raise_any()
        return cls(size, start, cursor, max_results)

    @property
    def size(self) -> int:
        """How many results this answer may hold."""
        return self.limit if self.max_results is None else self.max_results
