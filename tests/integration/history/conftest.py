"""Integration fixtures of the history context: a migrated database, the shared clock and
model fakes (tests/fakes.py), and the history runtime on them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from tests.conftest import migrated_database
from tests.fakes import TEST_ACTOR, FakeClock, FakeModel

from memory.application.embedding import EmbeddingModel
from memory.application.history.sweep import Sweeper
from memory.domain.history.chat_event import ChatEvent
from memory.domain.history.feature_flags import SEMANTIC_SEARCH_FLAG
from memory.entrypoints.history_runtime import HistoryRuntime
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
        runtime.service.set_global_flag(SEMANTIC_SEARCH_FLAG, True, actor=TEST_ACTOR)

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
