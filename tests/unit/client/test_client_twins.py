"""The blocking and the async client are written out side by side (docs/adr/0076): they
must offer the same methods with the same parameters, the async ones awaited."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from memory.client import AsyncMemoryClient, MemoryClient

# The context-manager protocol differs by nature (`__enter__` / `__aenter__`).
PROTOCOL = {"close"}


def public_methods(cls: type) -> dict[str, Callable[..., Any]]:
    return {
        name: member
        for name, member in vars(cls).items()
        if callable(member) and not name.startswith("_") and name not in PROTOCOL
    }


def test_both_clients_have_the_same_methods_with_the_same_parameters() -> None:
    blocking, awaited = public_methods(MemoryClient), public_methods(AsyncMemoryClient)
    assert set(blocking) == set(awaited)
    assert len(blocking) >= 30
    for name, method in blocking.items():
        sync_params = inspect.signature(method).parameters
        async_params = inspect.signature(awaited[name]).parameters
        assert [(p.name, p.kind, p.default, p.annotation) for p in sync_params.values()] == [
            (p.name, p.kind, p.default, p.annotation) for p in async_params.values()
        ], name


def test_the_async_client_awaits_every_call_and_iterates_pages_asynchronously() -> None:
    for name, method in public_methods(AsyncMemoryClient).items():
        if name.startswith("iter_"):
            assert inspect.isasyncgenfunction(method), name
        else:
            assert inspect.iscoroutinefunction(method), name
    for name, method in public_methods(MemoryClient).items():
        assert not inspect.iscoroutinefunction(method), name
