"""Test doubles for policy unit tests: an in-memory event store (the library's POPO
persistence, no I/O), the shared model fake (tests/fakes.py), a waiter that says what it is
told."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from tests.fakes import FakeModel

from memory.infrastructure.policy.event_store import EventSourcedPolicyLog, PolicyApplication


class ToldWaiter:
    def __init__(self, answer: bool = True) -> None:
        self.answer = answer
        self.waited_for: list[int] = []

    def wait(self, notification_id: int, timeout: float) -> bool:
        self.waited_for.append(notification_id)
        return self.answer


@pytest.fixture
def counting_model() -> Callable[..., FakeModel]:
    return FakeModel


@pytest.fixture
def told_waiter() -> ToldWaiter:
    return ToldWaiter()


@pytest.fixture
def memory_log() -> EventSourcedPolicyLog:
    """The real event-store adapter over the library's in-memory persistence."""
    return EventSourcedPolicyLog(
        PolicyApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    )


@pytest.fixture
def recorded(memory_log: EventSourcedPolicyLog) -> Callable[[], list[Any]]:
    """Every event notification recorded so far."""
    return lambda: list(memory_log.app.recorder.select_notifications(start=1, limit=10_000))
