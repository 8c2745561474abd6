"""Typed errors of `memory.client`: one class per error code family, each carrying the
service's `code`, `message`, `details` and the HTTP status."""

from __future__ import annotations

from typing import Any


class MemoryApiError(Exception):
    """An error answer of the service (`{"error": {"code", "message", "details"?}}`)."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        details: dict[str, Any] | None = None,
        *,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.details = details or {}
        self.retry_after = retry_after

    @property
    def fields(self) -> list[dict[str, str]]:
        """For a validation error: every failing field with its reason."""
        return list(self.details.get("fields", []))


class InvalidRequest(MemoryApiError):
    """422: `validation_error` (naming each field) or `input_rejected` (the model refused
    the text)."""


class NotFound(MemoryApiError):
    """404 `not_found`."""


class Conflict(MemoryApiError):
    """409 `conflict`."""


class Unauthorized(MemoryApiError):
    """401: no key, or an unknown or revoked one."""


class KeyExpired(Unauthorized):
    """401 `key_expired`: the key was valid and its expiry has come; rotate to a new one."""


class Forbidden(MemoryApiError):
    """403: the key lacks the scope the route needs."""


class RateLimited(MemoryApiError):
    """429, after the client's retries; `retry_after` says when to try again."""


class Unavailable(MemoryApiError):
    """503 (`database_unavailable`, `model_unavailable`, ...), after the client's retries."""


class TimedOut(MemoryApiError):
    """504 `timeout`: the service gave up on the request within its budget."""


class TransportFailed(MemoryApiError):
    """No answer at all (connection refused, client-side timeout), after retries."""


_BY_STATUS: dict[int, type[MemoryApiError]] = {
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    422: InvalidRequest,
    429: RateLimited,
    503: Unavailable,
    504: TimedOut,
}

# Codes worth a class of their own within their status.
_BY_CODE: dict[str, type[MemoryApiError]] = {"key_expired": KeyExpired}


def error_for(status: int, body: Any, *, retry_after: float | None = None) -> MemoryApiError:
    """The typed error for an error answer; a body that is not the service's error shape
    (a proxy's page) still gives the status-based class with code `http_<status>`."""
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("code"), str):
        code, message = error["code"], str(error.get("message", ""))
        details = error.get("details") if isinstance(error.get("details"), dict) else None
    else:
        code, message, details = f"http_{status}", f"HTTP {status}", None
    cls = _BY_CODE.get(code) or _BY_STATUS.get(status, MemoryApiError)
    return cls(status, code, message, details, retry_after=retry_after)
