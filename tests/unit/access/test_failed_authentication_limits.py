"""The bounded memory of failed authentications: unknown secrets and failing addresses."""

from __future__ import annotations

from memory.application.access.rate_limits import FailedAuthentications
from memory.application.access.unknown_secrets import UnknownSecrets


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_an_unknown_secret_is_remembered_for_its_ttl_and_the_oldest_goes_first() -> None:
    clock = Clock()
    unknown = UnknownSecrets(ttl=10.0, max_entries=3, monotonic=clock)
    for digest in (b"a", b"b", b"c"):
        unknown.add(digest)
    clock.now = 9.9
    assert b"a" in unknown
    unknown.add(b"d")
    assert len(unknown) == 3 and b"a" not in unknown and b"d" in unknown
    clock.now = 10.0
    assert b"b" not in unknown and b"d" in unknown
    unknown.forget(b"d")
    assert b"d" not in unknown


def test_an_address_may_fail_per_minute_times_then_waits_for_a_token() -> None:
    clock = Clock()
    failures = FailedAuthentications(6, monotonic=clock)
    for _ in range(6):
        assert failures.wait("10.0.0.1") == 0.0
        failures.failed("10.0.0.1")
    assert failures.wait("10.0.0.1") == 10.0  # one token per 10 s at 6 a minute
    assert failures.wait("10.0.0.2") == 0.0
    clock.now = 10.0
    assert failures.wait("10.0.0.1") == 0.0


def test_failing_addresses_are_forgotten_least_recent_first_past_the_bound() -> None:
    failures = FailedAuthentications(1, max_addresses=2, monotonic=Clock())
    for address in ("a", "b", "a", "c"):
        failures.failed(address)
    assert failures.wait("a") > 0 and failures.wait("c") > 0
    assert failures.wait("b") == 0.0
