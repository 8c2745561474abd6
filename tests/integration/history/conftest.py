"""Integration fixtures of the history context: a migrated database, a controllable clock,
and a model server fake at the edge (wrapping the deterministic hash model)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memory.application.embedding import EmbeddingError, EmbeddingModel, InputRejected, ModelStatus
from memory.domain.embedding import EmbeddingVector, ModelIdentity
from memory.domain.history.chat_event import ChatEvent
from memory.domain.history.feature_flags import SEMANTIC_SEARCH_FLAG
from memory.entrypoints.history_runtime import HistoryRuntime
from memory.infrastructure.embedding.hashing import HashEmbeddingModel
from memory.infrastructure.postgres.database import Database
from memory.infrastructure.settings import Settings

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


class FakeClock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


class EdgeModel:
    """A model server at the edge: the hash model's vectors, with failures on demand."""

    def __init__(self, inner: EmbeddingModel | None = None, *, model_id: str | None = None) -> None:
        self.inner = inner or HashEmbeddingModel(1024)
        dims = self.inner.identity.dimensions
        self._identity = ModelIdentity(model_id or self.inner.identity.id, dims)
        self.failure: EmbeddingError | None = None
        self.reject_marker: str | None = None
        self.document_calls: list[list[str]] = []
        self.query_calls = 0
        self.query_delay = 0.0
        self.entered = threading.Event()
        self.gate: threading.Event | None = None
        self._lock = threading.Lock()

    @property
    def identity(self) -> ModelIdentity:
        return self._identity

    @property
    def max_input_tokens(self) -> int:
        return self.inner.max_input_tokens

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def embed_documents(self, texts: Sequence[str]) -> list[EmbeddingVector]:
        with self._lock:
            self.document_calls.append(list(texts))
        self.entered.set()
        if self.gate is not None:
            assert self.gate.wait(20), "test gate never opened"
        if self.failure is not None:
            raise self.failure
        if self.reject_marker is not None and any(self.reject_marker in t for t in texts):
            raise InputRejected(self.identity.id, "input rejected by the server")
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> EmbeddingVector:
        self.query_calls += 1
        time.sleep(self.query_delay)
        if self.failure is not None:
            raise self.failure
        return self.inner.embed_query(text)

    def status(self) -> ModelStatus:
        return self.inner.status()

    @property
    def embedded_texts(self) -> list[str]:
        return [t for call in self.document_calls for t in call]


@pytest.fixture
def database(database_url: str) -> Iterator[Database]:
    db = Database(database_url, min_size=1, max_size=8)
    db.open()
    db.migrate()
    try:
        yield db
    finally:
        db.close()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0 + timedelta(days=1))


@pytest.fixture
def make_runtime(
    database: Database, make_settings: Callable[..., Settings], clock: FakeClock
) -> Iterator[Callable[..., HistoryRuntime]]:
    created: list[HistoryRuntime] = []

    def make(model: EmbeddingModel | None = None, **overrides: Any) -> HistoryRuntime:
        runtime = HistoryRuntime(
            make_settings(**overrides), database, model or EdgeModel(), clock=clock
        )
        created.append(runtime)
        return runtime

    yield make
    for runtime in created:
        runtime.close()


class Kit:
    """Helpers the tests share (a fixture, since test modules cannot import conftest)."""

    T0 = T0

    def __init__(self, database: Database, clock: FakeClock) -> None:
        self.database = database
        self.clock = clock

    @staticmethod
    def at(minutes: float) -> datetime:
        return T0 + timedelta(minutes=minutes)

    @staticmethod
    def message(
        event_id: str,
        minutes: float,
        text: str = "could you help me reset my password please",
        *,
        channel: str = "C1",
        provider: str = "slack",
        sender: str = "ali",
        decision: str = "received",
        event_type: str = "message",
    ) -> ChatEvent:
        return ChatEvent(
            event_id=event_id,
            provider=provider,
            channel_id=channel,
            sender=sender,
            text=text,
            occurred_at=T0 + timedelta(minutes=minutes),
            event_type=event_type,
            decision=decision,
        )

    @staticmethod
    def enable_semantic(runtime: HistoryRuntime) -> None:
        runtime.service.set_global_flag(SEMANTIC_SEARCH_FLAG, True)

    def rows(self, *, model: str | None = None) -> list[dict[str, Any]]:
        where = " WHERE model = %s" if model else ""
        with self.database.connection() as conn:
            return conn.execute(
                "SELECT id, org_id, provider, external_channel_id, model, content,"
                " source_event_ids, first_occurred_at, last_occurred_at,"
                " vector_dims(embedding) AS dims"
                f" FROM dw_message_embeddings{where} ORDER BY first_occurred_at, id",
                (model,) if model else (),
            ).fetchall()

    def covered(self, *, model: str | None = None) -> list[str]:
        """Every event id covered by a row, in row order (duplicates would show twice)."""
        return [e for r in self.rows(model=model) for e in r["source_event_ids"]]

    def scalar(self, statement: str, params: tuple[Any, ...] = ()) -> Any:
        with self.database.connection() as conn:
            row = conn.execute(statement, params).fetchone()
        assert row is not None
        return next(iter(row.values()))


@pytest.fixture
def kit(database: Database, clock: FakeClock) -> Kit:
    return Kit(database, clock)
