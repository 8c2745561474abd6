"""The request body limit, enforced on the bytes as they arrive (docs/security.md).

A declared `Content-Length` over the limit is refused before anything is read. Otherwise
the bytes received are counted, so a chunked body or one longer than its `Content-Length`
claims is stopped at the first chunk past the limit, never buffered whole.
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memory.entrypoints.http.errors import PayloadTooLarge, error_body


class BodyLimit:
    def __init__(self, app: ASGIApp, *, max_bytes: Callable[[], int]) -> None:
        self.app = app
        self._max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        max_bytes = self._max_bytes()
        declared = _content_length(scope)
        if declared is not None and declared > max_bytes:
            error = PayloadTooLarge(max_bytes)
            response = JSONResponse(error_body(error.code, error.message, error.details), 413)
            await response(scope, receive, send)
            return
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > max_bytes:
                    raise PayloadTooLarge(max_bytes)
            return message

        await self.app(scope, counted, send)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None
