"""How metrics and logs see the application services: one convention for both contexts.

Every public operation of a context's service (`PolicyService`, `HistoryService`) reports one
`ServiceCall` to its observers when it ends, successful or not. Observers are adapters
(Prometheus counters, log lines, the last sweep `/healthz` shows); the service never knows
which, and no route or CLI command records anything itself.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ServiceCall:
    """One finished call: which context and operation, how long it took, and either its
    typed result or the error it raised. `labels` carry what the caller said about the call
    (e.g. the sweep's trigger: api, cli, interval, notify)."""

    context: str
    operation: str
    seconds: float
    result: object = None
    error: Exception | None = None
    labels: Mapping[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None


class ServiceObserver(Protocol):
    def observe(self, call: ServiceCall) -> None:
        """Called after each operation, on the caller's thread. Must not raise."""
        ...


class Observed:
    """Runs a service's operations and reports each to the observers. An observer that
    fails is logged and ignored: metrics never break a write or a search."""

    def __init__(self, context: str, observers: Sequence[ServiceObserver] = ()) -> None:
        self._context = context
        self._observers = list(observers)

    def add(self, observer: ServiceObserver) -> None:
        self._observers.append(observer)

    def run(self, operation: str, call: Callable[[], T], **labels: str) -> T:
        started = time.perf_counter()
        try:
            result = call()
        except Exception as exc:
            self._report(
                ServiceCall(self._context, operation, self._since(started), None, exc, labels)
            )
            raise
        self._report(
            ServiceCall(self._context, operation, self._since(started), result, None, labels)
        )
        return result

    @staticmethod
    def _since(started: float) -> float:
        return time.perf_counter() - started

    def _report(self, call: ServiceCall) -> None:
        for observer in self._observers:
            try:
                observer.observe(call)
            except Exception:
                log.exception("observer %r failed on %s.%s", observer, call.context, call.operation)
