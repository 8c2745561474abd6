"""Integration fixtures of the history context: a migrated database, the shared clock and
model fakes (tests/fakes.py), and the history runtime on them."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from psycopg import sql
from tests.conftest import migrated_database
from tests.fakes import TEST_ACTOR, FakeClock, FakeModel

from memory.application.embedding import EmbeddingModel
from memory.application.history.sweep import Sweeper
from memory.domain.history.chat_event import ChatEvent
from memory.domain.history.feature_flags import SEMANTIC_SEARCH_FLAG
from memory.domain.history.partition import Partition
from memory.domain.relevance import ScriptGroup
from memory.entrypoints.history_runtime import HistoryRuntime
from memory.infrastructure.history.search_indexes import group_index_name, index_name
from memory.infrastructure.postgres.database import Database
from memory.infrastructure.settings import Settings

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@pytest.fixture
def database(database_url: str) -> Iterator[Database]:
    with migrated_database(database_url, max_size=8) as database:
        yield database


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
            make_settings(**overrides), database, model or FakeModel(dimensions=1024), clock=clock
        )
        created.append(runtime)
        return runtime

    yield make
    for runtime in created:
        runtime.close()


# The event log's methods that read a partition's messages.
PARTITION_READS = ("read_main", "read_main_many", "read_late", "count_unconsumed", "out_of_range")


class CountingLog:
    """An event log that records each read of a partition's messages (`reads`: the method
    and the partition) before passing it on."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.reads: list[tuple[str, Partition]] = []

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._inner, name)
        if name not in PARTITION_READS:
            return found

        def counted(partition: Partition, *args: Any, **kwargs: Any) -> Any:
            self.reads.append((name, partition))
            return found(partition, *args, **kwargs)

        def counted_together(marks: Any, *args: Any, **kwargs: Any) -> Any:
            self.reads += [(name, partition) for partition, _ in marks]
            return found(marks, *args, **kwargs)

        return counted_together if name == "read_main_many" else counted


@contextmanager
def counted_statements(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every statement any thread sends through psycopg meanwhile (search runs its
    full-text half in a worker thread)."""
    seen: list[str] = []
    lock = threading.Lock()
    execute, executemany = psycopg.Cursor.execute, psycopg.Cursor.executemany

    def text_of(cursor: Any, query: Any) -> str:
        return query.as_string(cursor) if isinstance(query, sql.Composable) else str(query)

    def record(text: str) -> None:
        # A new pooled connection's setup (pgvector's type lookup) is not the caller's.
        if text.strip() and "typname" not in text:
            with lock:
                seen.append(text)

    def counting(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        record(text_of(self, query))
        return execute(self, query, *args, **kwargs)

    def counting_many(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        record(text_of(self, query))
        return executemany(self, query, *args, **kwargs)

    with monkeypatch.context() as patched:
        patched.setattr(psycopg.Cursor, "execute", counting)
        patched.setattr(psycopg.Cursor, "executemany", counting_many)
        yield seen


class Kit:
    """Helpers the tests share (a fixture, since test modules cannot import conftest)."""

    T0 = T0
    CountingLog = CountingLog
    counted_statements = staticmethod(counted_statements)

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
        runtime.service.set_global_flag(SEMANTIC_SEARCH_FLAG, True, actor=TEST_ACTOR)

    def swept(
        self,
        runtime: HistoryRuntime,
        org: str,
        events: list[ChatEvent],
        *,
        closing: timedelta | None = None,
    ) -> None:
        """The search tests' seed: semantic search on, `events` ingested into `org` and
        swept (after `closing` on the clock, for windows that need it to close)."""
        self.enable_semantic(runtime)
        runtime.service.ingest(org, events)
        if closing is not None:
            self.clock.advance(seconds=closing.total_seconds())
        runtime.service.sweep(trigger="t")

    def window_index_names(self) -> set[str]:
        """The orgs' search indexes that exist on the windows' table (docs/adr/0134)."""
        with self.database.connection() as conn:
            rows = conn.execute(
                "SELECT indexname FROM pg_indexes WHERE tablename = 'dw_message_embeddings'"
                " AND indexname LIKE 'dw_window_hnsw_%'"
            ).fetchall()
        return {str(r["indexname"]) for r in rows}

    @staticmethod
    def group_indexes(org: str, model: str = "hash:1024") -> set[str]:
        """The names of an org's search index for `model`, one per script group."""
        name = index_name(org, model)
        return {group_index_name(name, g) for g in ScriptGroup}

    @staticmethod
    def sweeper(runtime: HistoryRuntime, **tuning: Any) -> Sweeper:
        """A sweeper on the runtime's own ports, as its service builds it, with `tuning`:
        smaller reads or batches, or a port replaced."""
        ports: dict[str, Any] = {
            "events": runtime.events,
            "windows": runtime.windows,
            "watermarks": runtime.watermarks,
            "locks": runtime.locks,
            "flags": runtime.flag_store,
            "model": runtime.model,
            "clock": runtime.clock,
            "schedule": runtime.schedule,
            "transactions": runtime.database,
        }
        return Sweeper(**(ports | tuning))

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
