from __future__ import annotations

import base64
import json
from uuid import uuid4

import pytest

from memory.domain.errors import InvalidInput
from memory.domain.policy.cursor import (
    CURSOR_MAC_BYTES,
    CURSOR_MAX_CHARS,
    CursorCodec,
    SearchCursor,
)

KEY = b"k" * 32


def test_round_trip_keeps_distance_exactly() -> None:
    cursor = SearchCursor(0.123456789012345678, uuid4(), "fp")
    codec = CursorCodec(KEY)
    assert codec.decode(codec.encode(cursor), fingerprint="fp") == cursor


def test_cursor_is_opaque_url_safe_and_short() -> None:
    token = CursorCodec(KEY).encode(SearchCursor(0.5, uuid4(), "f" * 32))
    assert set(token) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.")
    assert len(token) < CURSOR_MAX_CHARS
    assert len(base64.urlsafe_b64decode(token.split(".")[1] + "==")) == CURSOR_MAC_BYTES


def test_an_edited_cursor_is_refused() -> None:
    codec = CursorCodec(KEY)
    token = codec.encode(SearchCursor(0.5, uuid4(), "fp"))
    body, mac = token.split(".")
    payload = json.loads(base64.urlsafe_b64decode(body + "=="))
    payload["d"] = 0.9
    forged = base64.urlsafe_b64encode(json.dumps(payload).encode()).rstrip(b"=").decode()
    with pytest.raises(InvalidInput, match="signature") as err:
        codec.decode(f"{forged}.{mac}", fingerprint="fp")
    assert err.value.field == "cursor"


def test_a_cursor_signed_with_another_key_is_refused() -> None:
    token = CursorCodec(b"o" * 32).encode(SearchCursor(0.5, uuid4(), "fp"))
    with pytest.raises(InvalidInput):
        CursorCodec(KEY).decode(token, fingerprint="fp")


def test_a_cursor_of_another_search_is_refused() -> None:
    codec = CursorCodec(KEY)
    token = codec.encode(SearchCursor(0.5, uuid4(), "search-a"))
    with pytest.raises(InvalidInput, match="different search"):
        codec.decode(token, fingerprint="search-b")


@pytest.mark.parametrize("garbage", ["", "abc", "abc.def", "!!!.???", "x" * (CURSOR_MAX_CHARS + 1)])
def test_garbage_is_refused(garbage: str) -> None:
    with pytest.raises(InvalidInput) as err:
        CursorCodec(KEY).decode(garbage, fingerprint="fp")
    assert err.value.field == "cursor"


def test_short_keys_are_refused() -> None:
    with pytest.raises(ValueError):
        CursorCodec(b"short")
