"""Access results as answer models: what `/v1/api-keys` answers and `memory keys` prints."""

from __future__ import annotations

from memory.application.access.authentication import OwnKey
from memory.contract.responses import ApiKeyBody, ApiKeysBody, NewApiKeyBody, OwnApiKeyBody
from memory.domain.access.api_key import ApiKey
from memory.domain.access.scopes import sorted_scopes


def keys_body(keys: list[ApiKey]) -> ApiKeysBody:
    return ApiKeysBody(keys=[key_body(k) for k in keys])


def key_body(key: ApiKey) -> ApiKeyBody:
    return ApiKeyBody(
        key_id=key.key_id,
        name=key.name,
        org_id=key.org_id,
        scopes=sorted_scopes(key.scopes),
        created_at=key.created_at,
        last_used_at=key.last_used_at,
        revoked_at=key.revoked_at,
        expires_at=key.expires_at,
        created_by=key.created_by,
    )


def new_key_body(key: ApiKey, secret: str) -> NewApiKeyBody:
    """A key just created, with its secret (in this answer only)."""
    return NewApiKeyBody(**dict(key_body(key)), secret=secret)


def own_key_body(key: OwnKey, operations: list[str]) -> OwnApiKeyBody:
    return OwnApiKeyBody(
        key_id=key.key_id,
        name=key.name,
        source=key.source.value,
        org_id=key.org_id,
        scopes=sorted_scopes(key.scopes),
        created_at=key.created_at,
        expires_at=key.expires_at,
        operations=operations,
    )
