"""Opaque, tamper-evident search cursors: keyset pagination on (similarity, embedding_ref).

A cursor names the last result of a page (its cosine distance and reference) and the search
it belongs to (a fingerprint of model, query, threshold and filter). It is signed with
HMAC-SHA256, so an edited or truncated cursor is refused instead of silently paging from
somewhere else, and a cursor of one search cannot be replayed against another.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import math
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from memory.domain.errors import InvalidInput

CURSOR_VERSION = 1
CURSOR_MAX_CHARS = 512
# 128 bits of HMAC-SHA256 is far beyond guessing and keeps cursors short.
CURSOR_MAC_BYTES = 16
MIN_KEY_BYTES = 16


@dataclass(frozen=True, slots=True)
class SearchCursor:
    distance: float
    embedding_ref: UUID
    fingerprint: str


class CursorCodec:
    def __init__(self, key: bytes) -> None:
        if len(key) < MIN_KEY_BYTES:
            raise ValueError(f"cursor key must have at least {MIN_KEY_BYTES} bytes")
        self._key = key

    def encode(self, cursor: SearchCursor) -> str:
        return self.seal(
            {
                "v": CURSOR_VERSION,
                "d": cursor.distance,
                "r": cursor.embedding_ref.hex,
                "f": cursor.fingerprint,
            }
        )

    def decode(self, token: str, *, fingerprint: str, field: str = "cursor") -> SearchCursor:
        data = self.unseal(token, field=field)
        try:
            version, distance = data["v"], float(data["d"])
            ref, cursor_fingerprint = UUID(hex=data["r"]), str(data["f"])
        except (ValueError, KeyError, TypeError):
            raise InvalidInput(field, "is malformed") from None
        if version != CURSOR_VERSION or not math.isfinite(distance):
            raise InvalidInput(field, "is malformed")
        if cursor_fingerprint != fingerprint:
            raise InvalidInput(
                field,
                "belongs to a different search (model, query, threshold or filter changed)",
            )
        return SearchCursor(distance, ref, cursor_fingerprint)

    def seal(self, payload: dict[str, Any]) -> str:
        """Sign any small JSON object the same way (other listings' positions, e.g. the
        org directory's): `unseal` gives it back, or refuses an edited token."""
        data = json.dumps(payload, separators=(",", ":")).encode()
        return f"{_b64(data)}.{_b64(self._mac(data))}"

    def unseal(self, token: str, *, field: str = "cursor") -> dict[str, Any]:
        """The object `seal` signed; `InvalidInput` naming `field` for anything else."""
        if len(token) > CURSOR_MAX_CHARS:
            raise InvalidInput(field, "is not a cursor this service issued")
        body, _, mac = token.partition(".")
        try:
            payload, signature = _unb64(body), _unb64(mac)
        except (binascii.Error, ValueError):
            raise InvalidInput(field, "is not a cursor this service issued") from None
        if not hmac.compare_digest(signature, self._mac(payload)):
            raise InvalidInput(field, "is not a cursor this service issued (bad signature)")
        try:
            data = json.loads(payload)
        except ValueError:
            raise InvalidInput(field, "is malformed") from None
        if not isinstance(data, dict):
            raise InvalidInput(field, "is malformed")
        return data

    def _mac(self, payload: bytes) -> bytes:
        return hmac.new(self._key, payload, hashlib.sha256).digest()[:CURSOR_MAC_BYTES]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    if not text:
        raise ValueError("empty")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
