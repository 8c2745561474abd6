"""The request body limit, enforced on the bytes as they arrive (docs/security.md), and what
happens to the rest of a body answered before it arrived.

A declared `Content-Length` over the limit is refused before anything is read. Otherwise
the bytes received are counted, so a chunked body or one longer than its `Content-Length`
claims is stopped at the first chunk past the limit, never buffered whole.

An answer sent before the body has been received in full (a size rule broken in the first
chunk, the limit, a key refused before the body is read, no such route) closes the
connection when more than `DRAIN_MAX_BYTES` of the body may be left: otherwise the server
would receive and discard up to 8 MiB per refused request to keep the connection open,
and that receiving is what a client sending hostile bodies back to back costs everyone
else (docs/adr/0146-a-refused-body-is-not-received.md). A smaller rest is drained and the
connection kept.
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memory.entrypoints.http.errors import PayloadTooLarge, error_body

# The most of a body left unreceived that is still drained (read and discarded by the
# server) after an early answer, to keep the connection; above it the connection closes.
DRAIN_MAX_BYTES = 1024 * 1024
_CLOSE = (b"connection", b"close")


class BodyLimit:
    def __init__(self, app: ASGIApp, *, max_bytes: Callable[[], int]) -> None:
        self.app = app
        self._max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        max_bytes = self._max_bytes()
        body = _BodyLeft(scope)
        if body.declared is not None and body.declared > max_bytes:
            error = PayloadTooLarge(max_bytes)
            response = JSONResponse(error_body(error.code, error.message, error.details), 413)
            await response(scope, receive, body.closing(send))
            return

        async def counted() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                body.arrived(message)
                if body.received > max_bytes:
                    raise PayloadTooLarge(max_bytes)
            return message

        await self.app(scope, counted, body.closing(send))


class _BodyLeft:
    """How much of a request's body the app has not received yet, as far as it can tell:
    the declared `Content-Length` less what arrived, or unknown for a chunked body whose
    last chunk has not arrived."""

    def __init__(self, scope: Scope) -> None:
        self.declared = _content_length(scope)
        self.received = 0
        self._chunked = _chunked(scope)
        # No Content-Length and no chunked framing: the request has no body.
        self._ended = self.declared == 0 or (self.declared is None and not self._chunked)

    def arrived(self, message: Message) -> None:
        self.received += len(message.get("body", b""))
        if not message.get("more_body", False):
            self._ended = True

    def too_much_to_drain(self) -> bool:
        if self._ended:
            return False
        if self.declared is None:
            return True  # chunked: the rest may be anything up to the limit
        return self.declared - self.received > DRAIN_MAX_BYTES

    def closing(self, send: Send) -> Send:
        """`send`, adding `Connection: close` to an answer that leaves too much unread."""

        async def send_closing(message: Message) -> None:
            if message["type"] == "http.response.start" and self.too_much_to_drain():
                headers = [h for h in message.get("headers", []) if h[0].lower() != _CLOSE[0]]
                message = {**message, "headers": [*headers, _CLOSE]}
            await send(message)

        return send_closing


def _content_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def _chunked(scope: Scope) -> bool:
    return any(
        name == b"transfer-encoding" and b"chunked" in value.lower()
        for name, value in scope["headers"]
    )
