"""`watched`: a request gives up on a worker thread stuck in one database call, and only
then (docs/adr/0082)."""

from __future__ import annotations

import threading
import time

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from memory.application.errors import DeadlineExceeded
from memory.entrypoints.http.database_stall import StallLimit, watched
from memory.entrypoints.http.errors import EXCEPTION_HANDLERS
from memory.infrastructure.postgres.database_waits import waiting_on_database, waiting_since

pytestmark = pytest.mark.anyio

STALL = 0.3


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_thread_stuck_in_a_database_call_is_given_up_on() -> None:
    release = threading.Event()

    def hung() -> str:
        with waiting_on_database():
            release.wait(10)
        return "late"

    started = time.monotonic()
    try:
        with pytest.raises(DeadlineExceeded) as stalled:
            await watched(hung, stall_seconds=STALL)
    finally:
        release.set()
    assert time.monotonic() - started < 5 * STALL + 1
    assert stalled.value.details == {"timeout_seconds": STALL, "stage": "database"}
    assert "retry" in stalled.value.message


@pytest.mark.slow
async def test_slow_work_outside_the_database_and_many_short_calls_are_not_cut() -> None:
    def busy() -> int:
        calls = 0
        deadline = time.monotonic() + 3 * STALL
        while time.monotonic() < deadline:
            with waiting_on_database():
                time.sleep(STALL / 10)
            time.sleep(STALL / 10)  # the model, the CPU: not the database
            calls += 1
        return calls

    assert await watched(busy, stall_seconds=STALL) > 3


async def test_answers_and_errors_pass_through() -> None:
    assert await watched(lambda: 42, stall_seconds=STALL) == 42

    def fails() -> None:
        with waiting_on_database():
            raise KeyError("boom")

    with pytest.raises(KeyError):
        await watched(fails, stall_seconds=STALL)


def test_nested_database_calls_count_from_the_outermost() -> None:
    me = threading.get_ident()
    assert waiting_since(me) is None
    with waiting_on_database():
        outer = waiting_since(me)
        with waiting_on_database():
            assert waiting_since(me) == outer
        assert waiting_since(me) == outer
    assert waiting_since(me) is None


async def test_a_request_gives_up_after_the_configured_limit() -> None:
    """`StallLimit` hands each request the setting (MEMORY_DATABASE_STALL_TIMEOUT): a route
    calling `watched` without a limit of its own answers 504 after it, not after the 10 s
    default."""
    release = threading.Event()

    async def hangs(request: Request) -> Response:
        def hung() -> str:
            with waiting_on_database():
                release.wait(10)
            return "late"

        return JSONResponse(await watched(hung))

    app = Starlette(routes=[Route("/hangs", hangs)], exception_handlers=EXCEPTION_HANDLERS)
    app.add_middleware(StallLimit, seconds=lambda: STALL)
    started = time.monotonic()
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://test"
        ) as client:
            answer = await client.get("/hangs")
    finally:
        release.set()
    assert time.monotonic() - started < 5 * STALL + 1
    assert answer.status_code == 504
    error = answer.json()["error"]
    assert error["code"] == "timeout"
    assert error["details"] == {"timeout_seconds": STALL, "stage": "database"}
