"""Key secrets, scopes and the token bucket: pure rules, no database."""

from __future__ import annotations

import pytest

from memory.domain.access.api_key import (
    KEY_ID_BYTES,
    SECRET_BYTES,
    ApiKey,
    check_key_name,
    is_key_id,
    is_secret_format,
    new_key_id,
    new_secret,
    secret_digest,
)
from memory.domain.access.rate_limit import TokenBucket, retry_after_header
from memory.domain.access.scopes import Scope, parse_scopes, sorted_scopes
from memory.domain.errors import InvalidInput


def test_a_secret_is_prefixed_and_carries_all_its_random_bits() -> None:
    a = new_secret(b"\x00" * SECRET_BYTES)
    b = new_secret(b"\x00" * (SECRET_BYTES - 1) + b"\x01")
    assert a.startswith("mem_") and is_secret_format(a) and is_secret_format(b)
    assert a != b and secret_digest(a) != secret_digest(b)
    assert len(secret_digest(a)) == 32
    with pytest.raises(ValueError):
        new_secret(b"\x00" * (SECRET_BYTES - 1))


@pytest.mark.parametrize(
    "text", ["", "mem_", "mem_short", "key_" + "A" * 43, "mem_" + "A" * 42 + "!", "mem_" + "A" * 44]
)
def test_malformed_secrets_are_recognised_without_a_lookup(text: str) -> None:
    assert not is_secret_format(text)


def test_key_ids() -> None:
    key_id = new_key_id(b"\xab" * KEY_ID_BYTES)
    assert is_key_id(key_id) and key_id.startswith("key_")
    assert not is_key_id("admin-token")


def test_scopes_are_checked_and_named() -> None:
    assert parse_scopes(["admin", "history:read"]) == {Scope.ADMIN, Scope.HISTORY_READ}
    with pytest.raises(InvalidInput) as unknown:
        parse_scopes(["history:delete"])
    assert unknown.value.field == "scopes" and "history:delete" in unknown.value.reason
    with pytest.raises(InvalidInput):
        parse_scopes([])
    assert sorted_scopes({Scope.ADMIN, Scope.HISTORY_READ}) == ["history:read", "admin"]


def test_key_names() -> None:
    assert check_key_name("  ingest bot ") == "ingest bot"
    for bad in ["", "   ", "a\nb", "x" * 101]:
        with pytest.raises(InvalidInput):
            check_key_name(bad)


def test_what_a_key_covers() -> None:
    from datetime import UTC, datetime

    now = datetime.now(UTC)
    org_key = ApiKey("key_1", "k", "acme", frozenset({Scope.HISTORY_READ}), now)
    all_key = ApiKey("key_2", "k", None, frozenset({Scope.ADMIN}), now)
    assert org_key.covers("acme") and not org_key.covers("acme2") and not org_key.all_orgs
    assert all_key.covers("anything") and all_key.all_orgs
    assert org_key.has(Scope.HISTORY_READ) and not org_key.has(Scope.HISTORY_WRITE)


def test_a_bucket_allows_a_minutes_burst_then_refills_at_the_rate() -> None:
    bucket = TokenBucket.full(6, now=0.0)  # one token every 10 s
    assert [bucket.take(0.0) for _ in range(6)] == [0.0] * 6
    assert bucket.take(0.0) == pytest.approx(10.0)
    assert bucket.take(4.0) == pytest.approx(6.0)  # a refused request takes nothing
    assert bucket.take(10.0) == 0.0
    assert bucket.take(10.0) == pytest.approx(10.0)
    # Idle for an hour: full again, but never more than a minute's allowance.
    assert [bucket.take(3600.0) for _ in range(6)] == [0.0] * 6
    assert bucket.take(3600.0) > 0


def test_retry_after_is_whole_seconds_rounded_up() -> None:
    assert retry_after_header(0.2) == "1"
    assert retry_after_header(19.9999) == "20"
    assert retry_after_header(20.0) == "20"
