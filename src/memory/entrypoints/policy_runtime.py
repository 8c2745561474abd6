"""Wiring of the policy context: the adapters its use cases run on, its routes, the
projector worker `memory serve` runs, and its health."""

from __future__ import annotations

import logging
import time
from typing import Any, Protocol

import anyio
from starlette.routing import BaseRoute

from memory.application.embedding import EmbeddingModel
from memory.application.policy.commands import PolicyCommands
from memory.application.policy.queries import PolicyQueries
from memory.domain.policy.cursor import CursorCodec
from memory.domain.policy.dimensionality import FixedDimensionality
from memory.entrypoints.http.policy_routes import policy_routes
from memory.entrypoints.runtime import Worker
from memory.infrastructure.policy.event_store import EventSourcedPolicyLog
from memory.infrastructure.policy.metrics import (
    POLICY_PROJECTOR_LAG,
    POLICY_PROJECTOR_POSITION,
)
from memory.infrastructure.policy.progress import ProjectionProgress, TrackingWaiter
from memory.infrastructure.policy.projector import PolicyProjector, read_tracking_position
from memory.infrastructure.policy.read_model import PostgresPolicyReadModel
from memory.infrastructure.policy.secrets import load_cursor_key
from memory.infrastructure.postgres.database import Database
from memory.infrastructure.settings import Settings

log = logging.getLogger(__name__)

# While another process holds the active model's projector lease, retry this often (that
# process keeps the read model current meanwhile; this one takes over if it stops).
LEASE_RETRY_SECONDS = 5.0
# How often the running projector's health is checked and its lag published as a metric.
PROJECTOR_CHECK_SECONDS = 1.0


class ModelSource(Protocol):
    def get(self, spec_text: str) -> EmbeddingModel: ...


class PolicyRuntime:
    name = "policy"

    def __init__(self, settings: Settings, database: Database, model: EmbeddingModel) -> None:
        FixedDimensionality.check_model(model.identity)
        self.settings = settings
        self.database = database
        self.model = model
        self.log = EventSourcedPolicyLog.connect(database.url)
        self.progress = ProjectionProgress()
        self.projector: PolicyProjector | None = None
        model_id = model.identity.id
        waiter = TrackingWaiter(self.progress, lambda: read_tracking_position(database, model_id))
        self.commands = PolicyCommands(
            self.log,
            model,
            waiter,
            max_content_chars=settings.policy_max_content_chars,
            wait_timeout=settings.projection_wait_timeout,
        )
        self.queries = PolicyQueries(
            self.log,
            PostgresPolicyReadModel(
                database,
                model_id,
                mode=settings.policy_search_mode,
                ef_search=settings.policy_hnsw_ef_search,
            ),
            model,
            CursorCodec(load_cursor_key(database)),
            search_timeout=settings.search_timeout,
            default_threshold=settings.policy_similarity_threshold,
        )

    def routes(self) -> list[BaseRoute]:
        return policy_routes(
            self.commands, self.queries, search_timeout=self.settings.search_timeout
        )

    def workers(self) -> list[Worker]:
        return [self.run_projector]

    async def run_projector(self) -> None:
        """Project the active model's rows until cancelled. Raises if processing fails, so
        the app's supervisor restarts it (it resumes from its recorded position)."""
        projector = PolicyProjector(self.database, self.model, self.log, progress=self.progress)
        try:
            waiting_logged = False
            while not await anyio.to_thread.run_sync(projector.try_start):
                if not waiting_logged:
                    log.info(
                        "policy projector for %s runs in another process; standing by",
                        self.model.identity.id,
                    )
                    waiting_logged = True
                await anyio.sleep(LEASE_RETRY_SECONDS)
            self.projector = projector
            while True:
                await anyio.to_thread.run_sync(projector.check)
                await anyio.to_thread.run_sync(self._publish_lag)
                await anyio.sleep(PROJECTOR_CHECK_SECONDS)
        finally:
            self.projector = None
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(projector.stop)

    def health(self) -> dict[str, Any]:
        status = self.model.status()
        position, head = self._positions_now()
        return {
            "model": status.as_health(),
            "projector": {
                "running_here": self.projector is not None,
                "position": position,
                "head": head,
                "lag_events": _lag(position, head),
            },
            "search_mode": self.settings.policy_search_mode,
        }

    def close(self) -> None:
        self.log.close()

    def _positions_now(self) -> tuple[int | None, int | None]:
        head = self.log.head()
        position = read_tracking_position(self.database, self.model.identity.id)
        return position, head

    def _publish_lag(self) -> None:
        position, head = self._positions_now()
        model_id = self.model.identity.id
        POLICY_PROJECTOR_LAG.labels(model_id).set(_lag(position, head))
        POLICY_PROJECTOR_POSITION.labels(model_id).set(position or 0)


def _lag(position: int | None, head: int | None) -> int:
    return max(0, (head or 0) - (position or 0))


def build(settings: Settings, database: Database, models: ModelSource) -> PolicyRuntime:
    started = time.perf_counter()
    runtime = PolicyRuntime(settings, database, models.get(settings.policy_model))
    log.info(
        "policy memory ready (model %s, %s search) in %.2fs",
        runtime.model.identity.id,
        settings.policy_search_mode,
        time.perf_counter() - started,
    )
    return runtime
