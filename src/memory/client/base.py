"""What the sync and async clients share: headers, turning a `Call` into request
arguments, reading an answer, and refusing bad arguments before anything is sent."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from memory.client.calls import Call
from memory.client.errors import InvalidRequest, MemoryApiError, TransportFailed, error_for
from memory.client.retry import RETRY_STATUSES, RetryPolicy, parse_retry_after
from memory.contract.input import field_problems, invalid_request_message

M = TypeVar("M", bound=BaseModel)

DEFAULT_TIMEOUT = httpx.Timeout(30.0, connect=5.0)
# Statuses with no body the client could parse.
_NO_CONTENT = 204


def headers(api_key: str | None) -> dict[str, str]:
    out = {"accept": "application/json", "user-agent": "memory-client"}
    if api_key is not None:
        out["authorization"] = f"Bearer {api_key}"
    return out


def prepare(build: Callable[[], Call[M]]) -> Call[M]:
    """The call, or `InvalidRequest` naming every bad argument (as the server would)."""
    try:
        return build()
    except ValidationError as exc:
        fields = field_problems(exc)
        message = invalid_request_message(fields)
        raise InvalidRequest(422, "validation_error", message, {"fields": fields}) from None


def request_args(call: Call[Any]) -> dict[str, Any]:
    args: dict[str, Any] = {"params": dict(call.params)}
    if call.body is not None:
        args["json"] = dict(call.body)
    return args


def retry_wait(policy: RetryPolicy, attempt: int, response: httpx.Response | None) -> float | None:
    """Seconds before retrying after `attempt` (None: do not retry). A transport failure
    (no response) and 429/503 are retried; any other answer is final."""
    if response is not None and response.status_code not in RETRY_STATUSES:
        return None
    after = None if response is None else parse_retry_after(response.headers.get("retry-after"))
    return policy.wait_before_retry(attempt, after)


def result(call: Call[M], response: httpx.Response) -> M | None:
    if response.is_success:
        if response.status_code == _NO_CONTENT or call.answer is None:
            return None
        return call.parse(response.json())
    raise failure(response)


def failure(response: httpx.Response) -> MemoryApiError:
    try:
        body: Any = response.json()
    except ValueError:
        body = None
    return error_for(
        response.status_code,
        body,
        retry_after=parse_retry_after(response.headers.get("retry-after")),
    )


def transport_failure(exc: httpx.TransportError) -> TransportFailed:
    return TransportFailed(0, "transport_error", f"{type(exc).__name__}: {exc}")
