"""Wiring of the history context (placeholder until the context lands)."""

from __future__ import annotations

from typing import Any

from starlette.routing import BaseRoute

from memory.entrypoints.runtime import Worker
from memory.infrastructure.embedding.factory import ModelRegistry
from memory.infrastructure.postgres.database import Database
from memory.infrastructure.settings import Settings


class HistoryRuntime:
    name = "history"

    def routes(self) -> list[BaseRoute]:
        return []

    def workers(self) -> list[Worker]:
        return []

    def health(self) -> dict[str, Any]:
        return {}

    def close(self) -> None:
        pass


def build(settings: Settings, database: Database, models: ModelRegistry) -> HistoryRuntime:
    return HistoryRuntime()
