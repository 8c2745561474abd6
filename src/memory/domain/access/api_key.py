"""API keys: their secrets (format, digest, comparison) and what a key grants.

A secret is `mem_` followed by 256 random bits in unpadded base64url (43 characters): the
prefix lets secret scanners find leaked keys, the randomness makes a fast digest safe to
store (docs/adr/0057). Only the SHA-256 digest of a secret is ever stored.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from memory.domain.access.scopes import Scope
from memory.domain.errors import InvalidInput

SECRET_PREFIX = "mem_"
SECRET_BYTES = 32
KEY_ID_PREFIX = "key_"
KEY_ID_BYTES = 8
MAX_KEY_NAME_CHARS = 100
# The furthest a key's expiry may lie ahead (docs/adr/0080): an expiry exists to force a
# rotation, and one further away than this forces none. A key that should never expire is
# created without one.
MAX_KEY_LIFETIME = timedelta(days=366)
MAX_KEY_LIFETIME_DAYS = MAX_KEY_LIFETIME.days
_SECRET_BODY_CHARS = 43  # unpadded base64url of 32 bytes
_SECRET = re.compile(rf"^{SECRET_PREFIX}[A-Za-z0-9_-]{{{_SECRET_BODY_CHARS}}}$")
_KEY_ID = re.compile(rf"^{KEY_ID_PREFIX}[0-9a-f]{{{KEY_ID_BYTES * 2}}}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def new_secret(random_bytes: bytes) -> str:
    """The secret for `SECRET_BYTES` random bytes (the caller draws them from `secrets`)."""
    if len(random_bytes) != SECRET_BYTES:
        raise ValueError(f"a secret needs {SECRET_BYTES} random bytes")
    return SECRET_PREFIX + base64.urlsafe_b64encode(random_bytes).rstrip(b"=").decode("ascii")


def new_key_id(random_bytes: bytes) -> str:
    if len(random_bytes) != KEY_ID_BYTES:
        raise ValueError(f"a key id needs {KEY_ID_BYTES} random bytes")
    return KEY_ID_PREFIX + random_bytes.hex()


def is_secret_format(text: str) -> bool:
    """Whether `text` could be a key's secret at all (a malformed one needs no lookup)."""
    return _SECRET.fullmatch(text) is not None


def is_key_id(text: str) -> bool:
    return _KEY_ID.fullmatch(text) is not None


def secret_digest(secret: str) -> bytes:
    """SHA-256 of the secret: enough for 256 random bits, which no dictionary or brute force
    reaches, so a slow KDF would only slow every request (docs/adr/0057)."""
    return hashlib.sha256(secret.encode("utf-8")).digest()


def digests_match(a: bytes, b: bytes) -> bool:
    """Constant-time comparison, so response timing says nothing about how close a guess
    came."""
    return hmac.compare_digest(a, b)


def check_key_name(name: str) -> str:
    text = name.strip()
    if not text:
        raise InvalidInput("name", "must not be blank")
    if len(text) > MAX_KEY_NAME_CHARS:
        raise InvalidInput("name", f"at most {MAX_KEY_NAME_CHARS} characters")
    if _CONTROL.search(text):
        raise InvalidInput("name", "must not contain control characters")
    return text


def key_expiry(
    now: datetime, *, expires_at: datetime | None = None, expires_in_days: int | None = None
) -> datetime | None:
    """When a new key expires: at `expires_at`, or `expires_in_days` whole days from `now`,
    or never (neither given). It must lie after `now` and at most `MAX_KEY_LIFETIME` ahead;
    `InvalidInput` names the field otherwise."""
    if expires_at is not None and expires_in_days is not None:
        raise InvalidInput("expires_in_days", "give expires_at or expires_in_days, not both")
    if expires_in_days is not None:
        if not 1 <= expires_in_days <= MAX_KEY_LIFETIME_DAYS:
            raise InvalidInput("expires_in_days", f"must be between 1 and {MAX_KEY_LIFETIME_DAYS}")
        return now + timedelta(days=expires_in_days)
    if expires_at is None:
        return None
    if expires_at.tzinfo is None or expires_at.utcoffset() is None:
        raise InvalidInput("expires_at", "must name its time zone (e.g. Z or +02:00)")
    if expires_at <= now:
        raise InvalidInput("expires_at", "must be in the future")
    if expires_at - now > MAX_KEY_LIFETIME:
        raise InvalidInput(
            "expires_at", f"must be at most {MAX_KEY_LIFETIME_DAYS} days in the future"
        )
    return expires_at


@dataclass(frozen=True, slots=True)
class ApiKey:
    """A key as stored, without its secret. `org_id` None = every org. `created_by`: the
    key id of whoever created it (`cli`, `bootstrap`, `admin-token` or a key's id; None for
    a key created before creators were recorded, docs/adr/0098)."""

    key_id: str
    name: str
    org_id: str | None
    scopes: frozenset[Scope]
    created_at: datetime
    last_used_at: datetime | None = None
    revoked_at: datetime | None = None
    expires_at: datetime | None = None
    created_by: str | None = None

    @property
    def all_orgs(self) -> bool:
        return self.org_id is None

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None

    def expired(self, at: datetime) -> bool:
        """Whether the key's expiry has come by `at` (a key without one never expires)."""
        return self.expires_at is not None and at >= self.expires_at

    def revoked_as_of(self, at: datetime) -> ApiKey:
        return replace(self, revoked_at=at)

    def has(self, scope: Scope) -> bool:
        return scope in self.scopes

    def covers(self, org_id: str) -> bool:
        """Whether the key may act on `org_id` (its own org, or any for an all-orgs key)."""
        return self.org_id is None or hmac.compare_digest(self.org_id, org_id)
