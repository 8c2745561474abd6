"""Policy unit tests run on the policy ports in memory (tests/fakes.py): the library's
in-memory event store, the read model and its projection, the model store and leases."""

from __future__ import annotations

import pytest
from tests.fakes import InMemoryPolicy, InMemoryProjectionWaiter

from memory.infrastructure.policy.event_store import EventSourcedPolicyLog


@pytest.fixture
def policy() -> InMemoryPolicy:
    return InMemoryPolicy.create()


@pytest.fixture
def memory_log(policy: InMemoryPolicy) -> EventSourcedPolicyLog:
    """The real event-store adapter over the library's in-memory persistence."""
    return policy.log


@pytest.fixture
def waiter(policy: InMemoryPolicy) -> InMemoryProjectionWaiter:
    return policy.waiter
