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
from dataclasses import dataclass
from datetime import datetime

from memory.domain.access.scopes import Scope
from memory.domain.errors import InvalidInput

SECRET_PREFIX = "mem_"
SECRET_BYTES = 32
KEY_ID_PREFIX = "key_"
KEY_ID_BYTES = 8
MAX_KEY_NAME_CHARS = 100
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


@dataclass(frozen=True, slots=True)
class ApiKey:
    """A key as stored, without its secret. `org_id` None = every org."""

    key_id: str
    name: str
    org_id: str | None
    scopes: frozenset[Scope]
    created_at: datetime
    last_used_at: datetime | None = None
    revoked_at: datetime | None = None

    @property
    def all_orgs(self) -> bool:
        return self.org_id is None

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None

    def has(self, scope: Scope) -> bool:
        return scope in self.scopes

    def covers(self, org_id: str) -> bool:
        """Whether the key may act on `org_id` (its own org, or any for an all-orgs key)."""
        return self.org_id is None or hmac.compare_digest(self.org_id, org_id)
