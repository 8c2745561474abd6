"""The pure parts of talking to model servers: backoff and the status taxonomy."""

from __future__ import annotations

import pytest

from memory.infrastructure.embedding.model_server import (
    RETRY_JITTER,
    RETRY_MAX_DELAY,
    Failure,
    RetryPolicy,
    classify_status,
)


def test_delays_double_from_the_base_up_to_the_cap() -> None:
    policy = RetryPolicy(retries=8)

    delays = [policy.delay(retry, unit_random=0.0) for retry in range(1, 9)]

    assert delays == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0, 8.0]


def test_jitter_takes_at_most_its_share_of_the_delay() -> None:
    policy = RetryPolicy(retries=3)

    assert policy.delay(3, unit_random=0.0) == 2.0
    assert policy.delay(3, unit_random=0.5) == 1.5
    assert policy.delay(3, unit_random=0.999999) > 2.0 * (1 - RETRY_JITTER)


def test_a_retry_after_lengthens_the_wait_but_not_past_the_cap() -> None:
    policy = RetryPolicy(retries=3)

    assert policy.delay(1, 0.0, retry_after=3.0) == 3.0
    assert policy.delay(1, 0.0, retry_after=0.1) == 0.5
    assert policy.delay(1, 0.0, retry_after=3600.0) == RETRY_MAX_DELAY


def test_attempts_are_the_first_try_plus_the_retries() -> None:
    assert RetryPolicy(retries=0).attempts == 1
    assert RetryPolicy(retries=3).attempts == 4
    with pytest.raises(ValueError, match="negative"):
        RetryPolicy(retries=-1)
    with pytest.raises(ValueError, match="jitter"):
        RetryPolicy(retries=1, jitter=1.5)


@pytest.mark.parametrize(
    ("status", "failure"),
    [
        (408, Failure.TRANSIENT),
        (429, Failure.TRANSIENT),
        (500, Failure.TRANSIENT),
        (502, Failure.TRANSIENT),
        (503, Failure.TRANSIENT),
        (504, Failure.TRANSIENT),
        (400, Failure.INPUT_REJECTED),
        (413, Failure.INPUT_REJECTED),
        (422, Failure.INPUT_REJECTED),
        (401, Failure.MISCONFIGURED),
        (403, Failure.MISCONFIGURED),
        (404, Failure.MISCONFIGURED),
        (405, Failure.MISCONFIGURED),
        (501, Failure.MISCONFIGURED),
    ],
)
def test_each_status_is_transient_about_the_input_or_about_the_configuration(
    status: int, failure: Failure
) -> None:
    assert classify_status(status) is failure
