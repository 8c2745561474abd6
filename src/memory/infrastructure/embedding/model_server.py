"""Talking to a remote model server: timeouts, bounded retries, and which failure is which.

Both HTTP adapters (Ollama, OpenAI-compatible) send JSON through `ModelServer`, so they fail
the same way (ADR 0011):

- transient -- connection refused or reset, timeout, 408, 429, 5xx (but 501): retried up to
  `RetryPolicy.retries` times with exponential backoff and jitter, then `ModelUnavailable`;
- the input -- 400, 413, 422: `InputRejected` at once; the same input would fail again;
- the configuration -- 401, 403, 404 (unknown model, wrong URL), any other 4xx, a malformed
  body, an unusable URL: `ModelMisconfigured` at once.

Transient failures also feed the server's `CircuitBreaker` (ADR 0045): once it is open,
requests fail at once with `CircuitOpen` (a `ModelUnavailable`) instead of being sent, and
a call that is retrying stops at its next attempt.

Error messages name the model, the URL, the status and whether it was transient. They carry
the server's error *message* only, never the raw body: validation errors of some servers echo
the input, and input text must not reach logs or stored failure records.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

import httpx

from memory.application.embedding import (
    EmbeddingError,
    InputRejected,
    ModelMisconfigured,
    ModelUnavailable,
)
from memory.infrastructure.embedding.circuit_breaker import BreakerState, CircuitBreaker

logger = logging.getLogger(__name__)

# First retry waits about this long; each further retry doubles it, up to the cap.
RETRY_BASE_DELAY = 0.5
RETRY_MAX_DELAY = 8.0
# Share of each delay taken away at random, so clients that failed together do not retry
# together.
RETRY_JITTER = 0.5
# /healthz probes must answer fast even when a server hangs.
PROBE_TIMEOUT = 2.0
# Longest server error message quoted in our errors.
ERROR_MESSAGE_CHARS = 200

INPUT_REJECTED_STATUSES = frozenset({400, 413, 422})
TRANSIENT_CLIENT_STATUSES = frozenset({408, 429})


class Failure(Enum):
    TRANSIENT = "transient"
    INPUT_REJECTED = "input rejected"
    MISCONFIGURED = "misconfigured"


def classify_status(status: int) -> Failure:
    """What a non-2xx HTTP status says about a failed request."""
    if status in TRANSIENT_CLIENT_STATUSES or (status >= 500 and status != 501):
        return Failure.TRANSIENT
    if status in INPUT_REJECTED_STATUSES:
        return Failure.INPUT_REJECTED
    return Failure.MISCONFIGURED


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how patiently transient failures are retried."""

    retries: int
    base_delay: float = RETRY_BASE_DELAY
    max_delay: float = RETRY_MAX_DELAY
    jitter: float = RETRY_JITTER

    def __post_init__(self) -> None:
        if self.retries < 0:
            raise ValueError("retries must not be negative")
        if not 0.0 <= self.jitter <= 1.0:
            raise ValueError("jitter is a fraction in [0, 1]")

    @property
    def attempts(self) -> int:
        return self.retries + 1

    def delay(self, retry: int, unit_random: float, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number `retry` (1-based). `unit_random` in [0, 1)
        picks the jitter; a server's `Retry-After` lengthens the wait, up to the cap."""
        backoff = min(self.max_delay, self.base_delay * 2.0 ** (retry - 1))
        delay = backoff * (1.0 - self.jitter * unit_random)
        if retry_after is not None:
            delay = max(delay, min(retry_after, self.max_delay))
        return delay


class ModelServer:
    """JSON over HTTP to one model server for one model, with `RetryPolicy` and the error
    taxonomy above. Thread-safe (one pooled `httpx.Client`); `close()` releases it."""

    def __init__(
        self,
        model_id: str,
        base_url: str,
        *,
        timeout: float,
        policy: RetryPolicy,
        headers: Mapping[str, str] | None = None,
        breaker: CircuitBreaker | None = None,
        sleep: Callable[[float], None] = time.sleep,
        unit_random: Callable[[], float] = random.random,
    ) -> None:
        self._model_id = model_id
        self.breaker = breaker or CircuitBreaker(model_id)
        self._timeout = timeout
        self._policy = policy
        self._sleep = sleep
        self._unit_random = unit_random
        try:
            scheme = httpx.URL(base_url).scheme
        except httpx.InvalidURL as exc:
            raise ModelMisconfigured(model_id, f"server URL {base_url!r}: {exc}") from exc
        if scheme not in ("http", "https"):
            raise ModelMisconfigured(
                model_id, f"server URL {base_url!r} is not an http:// or https:// URL"
            )
        self._client = httpx.Client(base_url=base_url, timeout=timeout, headers=headers)

    @property
    def base_url(self) -> str:
        return str(self._client.base_url)

    def post(self, path: str, payload: Mapping[str, Any]) -> Any:
        """POST `payload` as JSON; the decoded JSON answer. Retries transient failures."""
        url = self._url(path)
        attempts = self._policy.attempts
        for attempt in range(1, attempts + 1):
            outcome = self._attempt("POST", url, payload, self._timeout)
            if isinstance(outcome, _Answer):
                return outcome.body
            failure = outcome
            if self.breaker.state is BreakerState.OPEN:
                break  # this failure opened it (or a probe failed): retrying cannot help
            if attempt < attempts:
                delay = self._policy.delay(attempt, self._unit_random(), outcome.retry_after)
                # Only the kind of failure: a server's error message may quote the input.
                logger.warning(
                    "%s: POST %s failed (%s); retry %d of %d in %.2fs",
                    self._model_id,
                    url,
                    outcome.kind,
                    attempt,
                    self._policy.retries,
                    delay,
                )
                self._sleep(delay)
        raise ModelUnavailable(
            self._model_id,
            f"POST {url} failed: {failure.reason} (transient; gave up after {attempt} "
            f"attempt{'s' if attempt > 1 else ''})",
        )

    def get(self, path: str, timeout: float = PROBE_TIMEOUT) -> Any:
        """One GET with a short timeout, for probes; raises the taxonomy, never retries.
        Probes bypass the circuit breaker: /healthz reports the server as it is now."""
        url = self._url(path)
        outcome = self._send("GET", url, None, min(timeout, self._timeout))
        if isinstance(outcome, _Answer):
            return outcome.body
        raise ModelUnavailable(self._model_id, f"GET {url} failed: {outcome.reason} (transient)")

    def close(self) -> None:
        self._client.close()

    def _url(self, path: str) -> str:
        return str(self._client.base_url.join(path.lstrip("/")))

    def _attempt(
        self, method: str, url: str, payload: Mapping[str, Any] | None, timeout: float
    ) -> _Answer | _Transient:
        """One request through the circuit breaker (`CircuitOpen` when it is open)."""
        self.breaker.admit()
        try:
            response = self._request(method, url, payload, timeout)
        except BaseException:
            self.breaker.released()  # never sent (an unusable URL)
            raise
        if isinstance(response, _Transient):
            self.breaker.failed()
            return response
        try:
            outcome = self._interpret(method, url, response)
        except EmbeddingError:
            self.breaker.succeeded()  # a permanent error is an answer: the server is up
            raise
        except BaseException:
            self.breaker.released()
            raise
        if isinstance(outcome, _Transient):
            self.breaker.failed()
        else:
            self.breaker.succeeded()
        return outcome

    def _send(
        self, method: str, url: str, payload: Mapping[str, Any] | None, timeout: float
    ) -> _Answer | _Transient:
        """One request: its answer or a transient failure. Permanent failures raise."""
        response = self._request(method, url, payload, timeout)
        if isinstance(response, _Transient):
            return response
        return self._interpret(method, url, response)

    def _request(
        self, method: str, url: str, payload: Mapping[str, Any] | None, timeout: float
    ) -> httpx.Response | _Transient:
        try:
            return self._client.request(method, url, json=payload, timeout=timeout)
        except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
            raise ModelMisconfigured(
                self._model_id, f"{method} {url}: unusable URL ({exc}) (permanent)"
            ) from exc
        except httpx.TimeoutException:
            return _Transient(f"no answer within {timeout:g}s", kind="timeout")
        except httpx.TransportError as exc:
            return _Transient(
                f"cannot reach the server ({type(exc).__name__}: {exc})", kind=type(exc).__name__
            )

    def _interpret(self, method: str, url: str, response: httpx.Response) -> _Answer | _Transient:
        status = response.status_code
        if response.is_success:
            try:
                return _Answer(response.json())
            except ValueError as exc:
                raise ModelMisconfigured(
                    self._model_id,
                    f"{method} {url} answered {status} with a body that is not JSON (permanent)",
                ) from exc
        message = _error_message(response)
        failure = classify_status(status)
        if failure is Failure.TRANSIENT:
            return _Transient(
                f"status {status}: {message}", _retry_after(response), kind=f"status {status}"
            )
        text = f"{method} {url} answered {status}: {message} (permanent, not retried)"
        if failure is Failure.INPUT_REJECTED:
            raise InputRejected(self._model_id, text)
        raise ModelMisconfigured(self._model_id, text)


@dataclass(frozen=True, slots=True)
class _Answer:
    body: Any


@dataclass(frozen=True, slots=True)
class _Transient:
    reason: str
    retry_after: float | None = None
    # The reason without anything the server said, for logs.
    kind: str = "transient"


def _error_message(response: httpx.Response) -> str:
    """The server's error message: Ollama `{"error": "..."}`, OpenAI
    `{"error": {"message": "..."}}`, FastAPI `{"detail": "..." | [{"msg": "..."}]}`."""
    try:
        body = response.json()
    except ValueError:
        return response.reason_phrase or "no error message"
    message: Any = None
    if isinstance(body, dict):
        message = body.get("error") or body.get("detail") or body.get("message")
        if isinstance(message, dict):
            message = message.get("message")
        elif isinstance(message, list) and message and isinstance(message[0], dict):
            message = message[0].get("msg")
    if not isinstance(message, str) or not message:
        return response.reason_phrase or "no error message"
    return message[:ERROR_MESSAGE_CHARS]


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after", "")
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if seconds >= 0 else None
