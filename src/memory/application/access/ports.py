"""Where API keys are kept."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from memory.domain.access.api_key import ApiKey


class KeyStore(Protocol):
    def add(self, key: ApiKey, digest: bytes) -> None: ...

    def find(self, digest: bytes) -> ApiKey | None:
        """The key whose secret has this SHA-256 digest, revoked or not."""
        ...

    def get(self, key_id: str) -> ApiKey | None: ...

    def keys(self, org_id: str | None, created_by: str | None = None) -> list[ApiKey]:
        """Oldest first: the org's keys, or every key for None; with `created_by`, only the
        keys that key id created, directly or through keys it created."""
        ...

    def revoke(self, key_id: str, at: datetime) -> None: ...

    def touch(self, key_id: str, at: datetime) -> None:
        """Record a use (`last_used_at`)."""
        ...

    def lock_bootstrap(self) -> None:
        """Serialise bootstraps of concurrently starting processes until the transaction
        ends (so that only one of them creates the first admin key)."""
        ...

    def count(self) -> int: ...
