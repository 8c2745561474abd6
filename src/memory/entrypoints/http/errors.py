"""The one place where errors become HTTP responses: `{"error": {"code", "message",
"details"?}}`, one status per error class."""

from __future__ import annotations

import logging
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from memory.application.access.errors import Forbidden, KeyExpired
from memory.application.embedding import (
    EmbeddingError,
    InputRejected,
    ModelMisconfigured,
    ModelUnavailable,
)
from memory.application.errors import DeadlineExceeded, ServiceUnavailable
from memory.contract.input import invalid_request_message
from memory.domain.errors import AlreadyExists, DomainError, InvalidInput, NotFound

log = logging.getLogger(__name__)


class RequestInvalid(DomainError):
    """The request body or query string does not match the contract (422)."""

    code = "validation_error"

    def __init__(self, fields: list[dict[str, str]]) -> None:
        super().__init__(invalid_request_message(fields), details={"fields": fields})


class PayloadTooLarge(DomainError):
    """The request body is larger than MEMORY_MAX_BODY_BYTES (413)."""

    code = "payload_too_large"

    def __init__(self, max_bytes: int) -> None:
        super().__init__(
            f"request body larger than {max_bytes} bytes", details={"max_bytes": max_bytes}
        )


_STATUS: list[tuple[type[Exception], int]] = [
    (PayloadTooLarge, 413),
    (KeyExpired, 401),
    (Forbidden, 403),
    (RequestInvalid, 422),
    (InvalidInput, 422),
    (NotFound, 404),
    (AlreadyExists, 409),
    (DeadlineExceeded, 504),
    (ServiceUnavailable, 503),
    (InputRejected, 422),
    (ModelUnavailable, 503),
    (ModelMisconfigured, 503),
]


def error_body(code: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if details:
        error["details"] = details
    return {"error": error}


def status_for(exc: Exception) -> int:
    for cls, status in _STATUS:
        if isinstance(exc, cls):
            return status
    return 500


async def handle_domain_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, DomainError)
    status = status_for(exc)
    headers = {}
    if isinstance(exc, ServiceUnavailable):
        headers["Retry-After"] = str(exc.retry_after_seconds)
    if status == 401:
        # RFC 6750: the token was recognised but is no longer good.
        headers["WWW-Authenticate"] = 'Bearer error="invalid_token"'
    return JSONResponse(error_body(exc.code, exc.message, exc.details), status, headers=headers)


async def handle_embedding_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, EmbeddingError)
    status = status_for(exc)
    headers = {}
    if isinstance(exc, ModelUnavailable):
        code = "model_unavailable"
        headers["Retry-After"] = str(exc.retry_after_seconds)
    elif isinstance(exc, ModelMisconfigured):
        code = "model_misconfigured"
    else:
        code = "input_rejected"
    # The class only (the access line has the route): a server's message may quote the input.
    log.warning("embedding failed: %s", type(exc).__name__, extra={"model": exc.model_id})
    return JSONResponse(
        error_body(code, str(exc), {"model": exc.model_id}), status, headers=headers
    )


async def handle_http_exception(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    codes = {404: "not_found", 405: "method_not_allowed"}
    return JSONResponse(
        error_body(codes.get(exc.status_code, "http_error"), str(exc.detail)),
        exc.status_code,
        headers=exc.headers,
    )


async def handle_unexpected(request: Request, exc: Exception) -> Response:
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    return JSONResponse(error_body("internal_error", "internal server error"), 500)


EXCEPTION_HANDLERS = {
    DomainError: handle_domain_error,
    EmbeddingError: handle_embedding_error,
    HTTPException: handle_http_exception,
    Exception: handle_unexpected,
}
