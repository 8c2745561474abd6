"""Every model call measured: latency and errors per model and operation, and one log line
when a model goes down and one when it is back.

`MeasuredModel` wraps whichever adapter the registry built, so the numbers are the same for
an in-process model and a model server, and no adapter records anything itself. Nothing of
the input is logged or labelled: a text may be chat or policy content.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from opentelemetry import trace
from prometheus_client import Counter, Histogram

from memory.application.embedding import (
    EmbeddingError,
    EmbeddingModel,
    InputRejected,
    ModelMisconfigured,
    ModelStatus,
    ModelUnavailable,
)
from memory.domain.embedding import EmbeddingVector, ModelIdentity

log = logging.getLogger(__name__)

T = TypeVar("T")

TRACER = trace.get_tracer("memory.model")

MODEL_CALL_SECONDS = Histogram(
    "memory_model_call_seconds",
    "Embedding model call latency (retries included), by model and operation",
    ["model", "operation"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60),
)
MODEL_CALL_ERRORS = Counter(
    "memory_model_call_errors_total",
    "Failed embedding model calls, by model, operation and kind of error",
    ["model", "operation", "error"],
)
MODEL_TEXTS = Counter(
    "memory_model_texts_total", "Texts embedded, by model and operation", ["model", "operation"]
)


def error_kind(exc: Exception) -> str:
    """The `error` label of a failed call: a fixed, small set."""
    if isinstance(exc, ModelUnavailable):
        return "unavailable"
    if isinstance(exc, InputRejected):
        return "input_rejected"
    if isinstance(exc, ModelMisconfigured):
        return "misconfigured"
    if isinstance(exc, EmbeddingError):
        return "model_error"
    return "error"


class Availability:
    """Whether a model answered its last call. Logs one warning when calls start failing as
    unavailable and one line with the outage's numbers when a call succeeds again."""

    def __init__(self, model_id: str, clock: Callable[[], float] = time.monotonic) -> None:
        self._model_id = model_id
        self._clock = clock
        self._lock = threading.Lock()
        self._down_since: float | None = None
        self._failed_calls = 0

    @property
    def down(self) -> bool:
        with self._lock:
            return self._down_since is not None

    def failed(self, exc: ModelUnavailable) -> None:
        with self._lock:
            self._failed_calls += 1
            if self._down_since is not None:
                return
            self._down_since = self._clock()
        # The class only: a server's message may quote the input.
        log.warning(
            "model unavailable",
            extra={"model": self._model_id, "error": type(exc).__name__},
        )

    def succeeded(self) -> None:
        with self._lock:
            if self._down_since is None:
                return
            seconds = self._clock() - self._down_since
            failed, self._down_since, self._failed_calls = self._failed_calls, None, 0
        log.info(
            "model recovered",
            extra={
                "model": self._model_id,
                "outage_seconds": round(seconds, 3),
                "failed_calls": failed,
            },
        )


class MeasuredModel:
    """An `EmbeddingModel` that reports each call of the model it wraps."""

    def __init__(self, inner: EmbeddingModel, clock: Callable[[], float] = time.monotonic) -> None:
        self._inner = inner
        self._clock = clock
        self._availability = Availability(inner.identity.id, clock)

    @property
    def inner(self) -> EmbeddingModel:
        return self._inner

    @property
    def identity(self) -> ModelIdentity:
        return self._inner.identity

    @property
    def max_input_tokens(self) -> int:
        return self._inner.max_input_tokens

    def count_tokens(self, text: str) -> int:
        return self._inner.count_tokens(text)

    def embed_documents(self, texts: Sequence[str]) -> list[EmbeddingVector]:
        vectors = self._measured(
            "embed_documents", lambda: self._inner.embed_documents(texts), len(texts)
        )
        MODEL_TEXTS.labels(self.identity.id, "embed_documents").inc(len(texts))
        return vectors

    def embed_query(self, text: str) -> EmbeddingVector:
        vector = self._measured("embed_query", lambda: self._inner.embed_query(text))
        MODEL_TEXTS.labels(self.identity.id, "embed_query").inc()
        return vector

    def status(self) -> ModelStatus:
        return self._inner.status()

    def close(self) -> None:
        close = getattr(self._inner, "close", None)
        if callable(close):
            close()

    def _measured(self, operation: str, call: Callable[[], T], texts: int = 1) -> T:
        model_id = self.identity.id
        started = self._clock()
        # A span per call (docs/adr/0111): the model, the operation and how many texts;
        # never the texts.
        attributes: dict[str, str | int] = {
            "memory.model": model_id,
            "memory.operation": operation,
            "memory.texts": texts,
        }
        try:
            with TRACER.start_as_current_span(f"model {operation}", attributes=attributes):
                result = call()
        except Exception as exc:
            MODEL_CALL_ERRORS.labels(model_id, operation, error_kind(exc)).inc()
            if isinstance(exc, ModelUnavailable):
                self._availability.failed(exc)
            raise
        finally:
            MODEL_CALL_SECONDS.labels(model_id, operation).observe(self._clock() - started)
        self._availability.succeeded()
        return result
