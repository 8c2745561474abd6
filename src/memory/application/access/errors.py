"""The refusals of the access context, each one HTTP status (`entrypoints/http/errors.py`)."""

from __future__ import annotations

from memory.domain.access.api_key import ApiKey
from memory.domain.access.grant import Excess
from memory.domain.errors import DomainError


class Forbidden(DomainError):
    """A valid key that may not do this (HTTP 403). The message never says whether an org
    the key does not cover exists."""

    code = "forbidden"

    @classmethod
    def beyond(cls, excess: list[Excess]) -> Forbidden:
        """A grant beyond what the granter holds: every field it exceeds, what is lacking."""
        return cls(
            "; ".join(e.reason for e in excess),
            details={
                "fields": [{"field": e.field, "reason": e.reason} for e in excess],
                "lacking": {e.field: e.lacking for e in excess},
            },
        )


class KeyExpired(DomainError):
    """A known key past its expiry (HTTP 401 `key_expired`): unlike an unknown or revoked
    one, its holder is told why, so that an expiry reads as "rotate" rather than "attack".
    Only the key's holder can present its secret, so naming the key tells nobody else
    anything."""

    code = "key_expired"

    def __init__(self, key: ApiKey) -> None:
        assert key.expires_at is not None
        expired_at = key.expires_at.isoformat()
        super().__init__(
            f"this API key expired at {expired_at}; use or create another one",
            details={"key_id": key.key_id, "expired_at": expired_at},
        )
