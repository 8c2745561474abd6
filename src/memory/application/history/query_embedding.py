"""Embedding a search query within a time budget, off the caller's thread.

The model call runs in a small dedicated pool so that the full-text query can run
meanwhile, and so that a hung model server cannot take more than these threads: a call that
overruns the budget is abandoned and the search degrades. An abandoned call that has not
reached the model yet never does (its queued task is cancelled, and a task that starts after
its deadline returns at once), so a model that recovers from a hang is not sent a backlog of
queries nobody waits for: at most `QUERY_EMBED_WORKERS` stale calls were already running.
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import logging
import time
from dataclasses import dataclass

from memory.application.embedding import EmbeddingError, EmbeddingModel
from memory.domain.embedding import EmbeddingVector

log = logging.getLogger(__name__)

QUERY_EMBED_WORKERS = 2


class QueryAbandoned(Exception):
    """The query's budget ran out before a worker picked it up; the model was not called."""


@dataclass
class PendingQueryVector:
    """A query being embedded. `result()` returns the vector, or None if the model failed
    or the budget ran out (`failure` then says which)."""

    _future: concurrent.futures.Future[EmbeddingVector]
    _deadline: float
    _model_id: str
    failure: str | None = None

    def result(self) -> EmbeddingVector | None:
        try:
            return self._future.result(timeout=max(0.0, self._deadline - time.monotonic()))
        except concurrent.futures.TimeoutError:
            self.failure = "timeout"
            self._future.cancel()
        except QueryAbandoned:
            self.failure = "timeout"
        except EmbeddingError as exc:
            self.failure = type(exc).__name__
        except ValueError:
            self.failure = "bad_vector"
        # Never the query text: it is chat content.
        log.warning(
            "history search: query embedding by %s failed (%s)", self._model_id, self.failure
        )
        return None


class QueryEmbedder:
    def __init__(self, model: EmbeddingModel, timeout: float) -> None:
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        self._model = model
        self._timeout = timeout
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=QUERY_EMBED_WORKERS, thread_name_prefix="history-query-embed"
        )

    def start(self, text: str) -> PendingQueryVector:
        deadline = time.monotonic() + self._timeout
        # In the caller's context: its trace span is the embedding's parent (ADR 0111).
        future = self._pool.submit(contextvars.copy_context().run, self._embed, text, deadline)
        return PendingQueryVector(future, deadline, self._model.identity.id)

    def _embed(self, text: str, deadline: float) -> EmbeddingVector:
        if time.monotonic() >= deadline:
            # The search has answered without this vector (or is about to).
            raise QueryAbandoned
        return self._model.identity.check(self._model.embed_query(text))

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
