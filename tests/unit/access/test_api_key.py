"""Key secrets, scopes and the token bucket: pure rules, no database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from memory.domain.access.api_key import (
    KEY_ID_BYTES,
    MAX_KEY_LIFETIME,
    MAX_KEY_LIFETIME_DAYS,
    SECRET_BYTES,
    ApiKey,
    check_key_name,
    is_key_id,
    is_secret_format,
    key_expiry,
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


NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def test_a_key_without_an_expiry_never_expires() -> None:
    assert key_expiry(NOW) is None
    key = ApiKey("key_0123456789abcdef", "bot", None, frozenset(), NOW)
    assert not key.expired(NOW + timedelta(days=100_000))


def test_a_key_expires_at_its_expiry_not_a_moment_before() -> None:
    expires = key_expiry(NOW, expires_at=NOW + timedelta(hours=1))
    assert expires == NOW + timedelta(hours=1)
    key = ApiKey("key_0123456789abcdef", "bot", None, frozenset(), NOW, expires_at=expires)
    assert not key.expired(expires - timedelta(microseconds=1))
    assert key.expired(expires)


def test_expires_in_days_counts_whole_days_from_now() -> None:
    assert key_expiry(NOW, expires_in_days=30) == NOW + timedelta(days=30)
    assert key_expiry(NOW, expires_in_days=MAX_KEY_LIFETIME_DAYS) == NOW + MAX_KEY_LIFETIME


def test_an_expiry_in_another_time_zone_is_the_same_instant() -> None:
    plus_two = timezone(timedelta(hours=2))
    given = (NOW + timedelta(days=1)).astimezone(plus_two)
    assert key_expiry(NOW, expires_at=given) == NOW + timedelta(days=1)


@pytest.mark.parametrize(
    ("given", "field", "reason"),
    [
        ({"expires_at": NOW}, "expires_at", "future"),
        ({"expires_at": NOW - timedelta(seconds=1)}, "expires_at", "future"),
        ({"expires_at": NOW + MAX_KEY_LIFETIME + timedelta(seconds=1)}, "expires_at", "days"),
        ({"expires_at": datetime(2026, 6, 1)}, "expires_at", "time zone"),
        ({"expires_in_days": 0}, "expires_in_days", "between"),
        ({"expires_in_days": MAX_KEY_LIFETIME_DAYS + 1}, "expires_in_days", "between"),
        (
            {"expires_at": NOW + timedelta(days=1), "expires_in_days": 1},
            "expires_in_days",
            "not both",
        ),
    ],
)
def test_an_expiry_out_of_bounds_is_refused_naming_the_field(
    given: dict[str, object], field: str, reason: str
) -> None:
    with pytest.raises(InvalidInput) as refused:
        key_expiry(NOW, **given)  # type: ignore[arg-type]
    assert refused.value.field == field and reason in refused.value.reason
