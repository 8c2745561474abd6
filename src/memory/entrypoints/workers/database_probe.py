"""Asking the database whether it answers, within a bound, from an event loop: for /healthz
and for the worker supervisor's outage handling (docs/adr/0047)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import anyio

from memory.infrastructure.postgres.database import Database


async def bounded_in_thread(seconds: float, work: Callable[[], Any]) -> Any:
    """`work()` in a worker thread, abandoned (it ends on its own database bounds) after
    `seconds`: raises TimeoutError then."""
    with anyio.fail_after(seconds):
        return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)


async def database_problem(database: Database, seconds: float) -> str | None:
    """None if the database answers within `seconds`, else what went wrong."""
    try:
        await bounded_in_thread(seconds, functools.partial(database.ping, timeout=seconds))
    except TimeoutError:
        return f"unavailable: no answer within {seconds:g}s"
    except Exception as exc:  # any failure to reach the database means unhealthy
        return f"unavailable: {exc}"
    return None
