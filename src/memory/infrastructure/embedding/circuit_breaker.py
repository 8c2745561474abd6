"""A circuit breaker per remote model server (ADR 0045).

Retries with backoff (ADR 0011) are right for a blip, wrong for a server that is down: every
caller would wait out its whole budget (a history search ~1 s) to learn what the previous
caller already learned. After `threshold` transient failures in a row (connection refused or
reset, timeout, 408/429/5xx) the circuit opens: calls fail at once with `CircuitOpen` (a
`ModelUnavailable`, so history search degrades, policy writes answer 503 with Retry-After and
the sweep stalls) for `cooldown` seconds. Then it is half-open: the next call goes through as
the probe while others still fail fast; its success closes the circuit, its failure opens it
for another cool-down. Any answer from the server that is not transient (a vector, or a 4xx
about the input or the configuration) proves it reachable and counts as a success.
"""

from __future__ import annotations

import enum
import math
import threading
import time
from collections.abc import Callable
from typing import Any

from prometheus_client import Counter, Gauge

from memory.application.embedding import ModelUnavailable

# Transient failures in a row that open the circuit: more than one call's worth of retries
# at the default MEMORY_MODEL_RETRIES (3), so one unlucky call does not open it alone.
BREAKER_FAILURE_THRESHOLD = 5
# Seconds an open circuit fails calls at once before letting a probe through.
BREAKER_COOLDOWN_SECONDS = 10.0
# Retry-After for callers turned away while the half-open probe is in flight.
PROBE_RETRY_AFTER_SECONDS = 1.0


class BreakerState(enum.Enum):
    CLOSED = "closed"
    HALF_OPEN = "half_open"
    OPEN = "open"


# The gauge's values, in order of severity.
_STATE_VALUE = {BreakerState.CLOSED: 0, BreakerState.HALF_OPEN: 1, BreakerState.OPEN: 2}

CIRCUIT_STATE = Gauge(
    "memory_model_circuit_state",
    "Circuit breaker of a model server: 0 closed, 1 half-open, 2 open",
    ["model"],
)
CIRCUIT_OPENED = Counter(
    "memory_model_circuit_opened_total",
    "Times the circuit breaker of a model server opened",
    ["model"],
)


class CircuitOpen(ModelUnavailable):
    """The model server is known to be down: failed at once, without a request."""

    def __init__(self, model_id: str, retry_after: float) -> None:
        super().__init__(
            model_id,
            "model server unreachable after repeated failures (circuit open); "
            f"not calling it for {retry_after:.1f}s",
        )
        self.retry_after_seconds = max(1, math.ceil(retry_after))


class CircuitBreaker:
    """Thread-safe. Callers bracket every request: `admit()` (raises `CircuitOpen`), then
    exactly one of `succeeded()`, `failed()` or `released()` (no verdict about the server)."""

    def __init__(
        self,
        model_id: str,
        *,
        threshold: int = BREAKER_FAILURE_THRESHOLD,
        cooldown: float = BREAKER_COOLDOWN_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if threshold < 1:
            raise ValueError("threshold must be at least 1")
        if cooldown <= 0:
            raise ValueError("cooldown must be positive")
        self._model_id = model_id
        self._threshold = threshold
        self._cooldown = cooldown
        self._clock = clock
        self._lock = threading.Lock()
        self._state = BreakerState.CLOSED
        self._failures = 0
        self._opened_at = 0.0
        self._opened_total = 0
        self._probing = False
        CIRCUIT_STATE.labels(model_id).set(_STATE_VALUE[self._state])

    @property
    def state(self) -> BreakerState:
        with self._lock:
            return self._state

    def admit(self) -> None:
        with self._lock:
            if self._state is BreakerState.CLOSED:
                return
            if self._state is BreakerState.OPEN:
                left = self._opened_at + self._cooldown - self._clock()
                if left > 0:
                    raise CircuitOpen(self._model_id, left)
                self._set(BreakerState.HALF_OPEN)
            if self._probing:
                raise CircuitOpen(self._model_id, PROBE_RETRY_AFTER_SECONDS)
            self._probing = True

    def succeeded(self) -> None:
        with self._lock:
            self._failures = 0
            self._probing = False
            if self._state is not BreakerState.CLOSED:
                self._set(BreakerState.CLOSED)

    def failed(self) -> None:
        with self._lock:
            self._failures += 1
            self._probing = False
            probe_failed = self._state is BreakerState.HALF_OPEN
            if probe_failed or (
                self._state is BreakerState.CLOSED and self._failures >= self._threshold
            ):
                self._opened_at = self._clock()
                self._opened_total += 1
                CIRCUIT_OPENED.labels(self._model_id).inc()
                self._set(BreakerState.OPEN)

    def released(self) -> None:
        """The admitted request ended without saying anything about the server (it was
        never sent): a probe slot it held is free again."""
        with self._lock:
            self._probing = False

    def health(self) -> dict[str, Any]:
        """The breaker's part of the model's /healthz entry."""
        with self._lock:
            entry: dict[str, Any] = {
                "state": self._state.value,
                "consecutive_failures": self._failures,
                "opened_total": self._opened_total,
            }
            if self._state is BreakerState.OPEN:
                left = self._opened_at + self._cooldown - self._clock()
                entry["probe_in_seconds"] = round(max(0.0, left), 1)
            return entry

    def _set(self, state: BreakerState) -> None:
        self._state = state
        CIRCUIT_STATE.labels(self._model_id).set(_STATE_VALUE[state])
