"""The circuit breaker's states, on a controllable clock (ADR 0045)."""

from __future__ import annotations

import pytest
from prometheus_client import REGISTRY

from memory.application.embedding import ModelUnavailable
from memory.infrastructure.embedding.circuit_breaker import (
    BreakerState,
    CircuitBreaker,
    CircuitOpen,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def breaker(clock: Clock, model: str = "ollama:unit", threshold: int = 3) -> CircuitBreaker:
    return CircuitBreaker(model, threshold=threshold, cooldown=10.0, clock=clock)


def fail(b: CircuitBreaker, times: int) -> None:
    for _ in range(times):
        b.admit()
        b.failed()


def test_it_opens_after_the_threshold_of_consecutive_failures_and_then_fails_at_once() -> None:
    clock = Clock()
    b = breaker(clock)
    fail(b, 2)
    assert b.state is BreakerState.CLOSED
    fail(b, 1)
    assert b.state is BreakerState.OPEN
    with pytest.raises(CircuitOpen) as raised:
        b.admit()
    assert isinstance(raised.value, ModelUnavailable)
    assert raised.value.retry_after_seconds == 10


def test_a_success_resets_the_count_of_consecutive_failures() -> None:
    b = breaker(Clock())
    fail(b, 2)
    b.admit()
    b.succeeded()
    fail(b, 2)
    assert b.state is BreakerState.CLOSED


def test_after_the_cooldown_one_probe_goes_through_and_its_success_closes() -> None:
    clock = Clock()
    b = breaker(clock)
    fail(b, 3)
    clock.now += 9.5
    with pytest.raises(CircuitOpen) as raised:
        b.admit()
    assert raised.value.retry_after_seconds == 1
    clock.now += 0.5
    b.admit()  # the probe
    assert b.state is BreakerState.HALF_OPEN
    with pytest.raises(CircuitOpen):
        b.admit()  # others still fail fast while the probe is out
    b.succeeded()
    assert b.state is BreakerState.CLOSED
    b.admit()
    b.admit()


def test_a_failed_probe_opens_it_for_another_cooldown() -> None:
    clock = Clock()
    b = breaker(clock)
    fail(b, 3)
    clock.now += 10
    b.admit()
    b.failed()
    assert b.state is BreakerState.OPEN
    clock.now += 9
    with pytest.raises(CircuitOpen):
        b.admit()
    clock.now += 1
    b.admit()
    assert b.state is BreakerState.HALF_OPEN


def test_a_probe_that_was_never_sent_frees_the_probe_slot() -> None:
    clock = Clock()
    b = breaker(clock)
    fail(b, 3)
    clock.now += 10
    b.admit()
    b.released()
    b.admit()
    assert b.state is BreakerState.HALF_OPEN


def test_health_and_metrics_show_the_state_and_how_often_it_opened() -> None:
    clock = Clock()
    b = breaker(clock, model="ollama:metrics-unit")
    labels = {"model": "ollama:metrics-unit"}

    def opened() -> float:
        return REGISTRY.get_sample_value("memory_model_circuit_opened_total", labels) or 0.0

    before = opened()
    assert b.health() == {"state": "closed", "consecutive_failures": 0, "opened_total": 0}
    fail(b, 3)
    clock.now += 4
    assert b.health() == {
        "state": "open",
        "consecutive_failures": 3,
        "opened_total": 1,
        "probe_in_seconds": 6.0,
    }
    assert REGISTRY.get_sample_value("memory_model_circuit_state", labels) == 2
    assert opened() == before + 1
    clock.now += 6
    b.admit()
    assert REGISTRY.get_sample_value("memory_model_circuit_state", labels) == 1
    b.succeeded()
    assert REGISTRY.get_sample_value("memory_model_circuit_state", labels) == 0


def test_threshold_and_cooldown_must_be_positive() -> None:
    with pytest.raises(ValueError):
        CircuitBreaker("m", threshold=0)
    with pytest.raises(ValueError):
        CircuitBreaker("m", cooldown=0)
