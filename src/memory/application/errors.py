"""Application-level failures that are not broken domain rules."""

from __future__ import annotations

from memory.domain.errors import DomainError


class DeadlineExceeded(DomainError):
    """An operation ran past its time budget (HTTP 504, code `timeout`)."""

    code = "timeout"


class ServiceUnavailable(DomainError):
    """A dependency is temporarily unavailable (HTTP 503 with Retry-After)."""

    code = "unavailable"
    retry_after_seconds = 5


class DatabaseUnavailable(ServiceUnavailable):
    """The database cannot be reached (down, restarting, or no connection free in time).
    Nothing was changed; the request can be retried (HTTP 503 with Retry-After)."""

    code = "database_unavailable"
