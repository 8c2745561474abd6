"""Answering a request whose database stopped answering (docs/adr/0082).

`watched(run)` runs `run` in a worker thread like `anyio.to_thread.run_sync`, and watches
it: once the thread has been inside one database call for the request's stall limit
(`MEMORY_DATABASE_STALL_TIMEOUT`, default `DATABASE_STALL_SECONDS`), the request answers
504 `timeout` (stage `database`) and the thread is abandoned. Every /v1 handler hands its
database work to a thread this way; `StallLimit`, a middleware, gives each request the
configured limit, so no route needs the setting. It finishes
by itself when the database wakes up, so a write may still be applied then: the answer says
so, and retrying is safe (ingest skips events it has; storing a policy again answers 409).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import TypeVar

import anyio
from starlette.types import ASGIApp, Receive, Scope, Send

from memory.application.errors import DeadlineExceeded
from memory.infrastructure.postgres.database_waits import DATABASE_STALL_SECONDS, waiting_since

T = TypeVar("T")

# How often the request looks at its worker thread.
STALL_POLL_SECONDS = 0.25

# The current request's limit: set by `StallLimit` from the settings.
_stall_limit: ContextVar[float] = ContextVar("database_stall_limit", default=DATABASE_STALL_SECONDS)


class StallLimit:
    """Pure ASGI middleware: `watched` calls made while serving a request give up after
    `seconds()` in one database call. Outside the access control, so that looking up the
    caller's API key is bounded too."""

    def __init__(self, app: ASGIApp, *, seconds: Callable[[], float]) -> None:
        self.app = app
        self._seconds = seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        token = _stall_limit.set(self._seconds())
        try:
            await self.app(scope, receive, send)
        finally:
            _stall_limit.reset(token)


async def watched(run: Callable[[], T], *, stall_seconds: float | None = None) -> T:
    """`run()` in a worker thread; `DeadlineExceeded` once it has waited `stall_seconds`
    (default: the request's limit, see `StallLimit`) on one database call (the thread is
    then abandoned)."""
    if stall_seconds is None:
        stall_seconds = _stall_limit.get()
    worker: list[int] = []
    outcome: list[T] = []
    failure: list[BaseException] = []
    done = anyio.Event()

    def tracked() -> T:
        worker.append(threading.get_ident())
        return run()

    async def work() -> None:
        try:
            outcome.append(await anyio.to_thread.run_sync(tracked, abandon_on_cancel=True))
        except Exception as exc:
            failure.append(exc)
        finally:
            done.set()

    stalled = False
    async with anyio.create_task_group() as tg:
        tg.start_soon(work)
        while not done.is_set():
            with anyio.move_on_after(STALL_POLL_SECONDS):
                await done.wait()
            since = waiting_since(worker[0]) if worker else None
            if (
                not done.is_set()
                and since is not None
                and time.monotonic() - since >= stall_seconds
            ):
                stalled = True
                tg.cancel_scope.cancel()
                break
    if stalled:
        raise DeadlineExceeded(
            f"the database did not answer within {stall_seconds:g}s; a change may still "
            "be applied when it does, so retry to find out (retrying is safe)",
            details={"timeout_seconds": stall_seconds, "stage": "database"},
        )
    if failure:
        raise failure[0]
    return outcome[0]
