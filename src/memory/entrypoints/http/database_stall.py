"""Answering a request whose database stopped answering (docs/adr/0082).

`watched(run)` runs `run` in a worker thread like `anyio.to_thread.run_sync`, and watches
it: once the thread has been inside one database call for `DATABASE_STALL_SECONDS`, the
request answers 504 `timeout` (stage `database`) and the thread is abandoned. It finishes
by itself when the database wakes up, so a write may still be applied then: the answer says
so, and retrying is safe (ingest skips events it has; storing a policy again answers 409).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

import anyio

from memory.application.errors import DeadlineExceeded
from memory.infrastructure.postgres.database_waits import waiting_since

T = TypeVar("T")

# One database call of a request taking this long means the database has stopped answering:
# a request's statements take milliseconds, a connection is waited for at most
# MEMORY_DATABASE_TIMEOUT (2 s), and a search has its own 2 s budget. Generous, because a
# loaded machine and lock waits stretch legitimate calls, and a caller told "timeout" about
# a write that then succeeds must retry to find out.
DATABASE_STALL_SECONDS = 10.0
# How often the request looks at its worker thread.
STALL_POLL_SECONDS = 0.25


async def watched(run: Callable[[], T], *, stall_seconds: float = DATABASE_STALL_SECONDS) -> T:
    """`run()` in a worker thread; `DeadlineExceeded` once it has waited `stall_seconds` on
    one database call (the thread is then abandoned)."""
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
