"""Wiring of the policy context: the adapters under its `PolicyService` (which builds its
use cases from them), the service's observers, its routes, its worker
(`memory.entrypoints.workers.policy`, run through the service) and its health."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Protocol

from memory.application.audit.ports import AuditTrail
from memory.application.embedding import EmbeddingModel
from memory.application.observer import ServiceObserver
from memory.application.policy.service import PolicyPorts, PolicyService
from memory.domain.policy.cursor import CursorCodec
from memory.domain.policy.dimensionality import FixedDimensionality
from memory.entrypoints.runtime import Worker
from memory.entrypoints.workers.policy import PolicyWorkers
from memory.infrastructure.audit.audit_log import PostgresAuditTrail
from memory.infrastructure.policy.event_store import EventSourcedPolicyLog
from memory.infrastructure.policy.metrics import PolicyMetrics
from memory.infrastructure.policy.model_store import PostgresPolicyModelStore
from memory.infrastructure.policy.progress import ProjectionProgress, TrackingWaiter
from memory.infrastructure.policy.projector import PolicyProjector, read_tracking_position
from memory.infrastructure.policy.read_model import PostgresPolicyReadModel
from memory.infrastructure.policy.secrets import load_cursor_key
from memory.infrastructure.policy.similarity_distribution import (
    PostgresPolicySimilarityDistribution,
)
from memory.infrastructure.postgres.database import Database
from memory.infrastructure.service_log import ServiceLog
from memory.infrastructure.settings import Settings

if TYPE_CHECKING:
    # Only for annotations: building a context never imports Starlette (memory.api).
    from starlette.routing import BaseRoute

log = logging.getLogger(__name__)


class ModelSource(Protocol):
    def get(self, spec_text: str) -> EmbeddingModel: ...


class PolicyRuntime:
    name = "policy"

    def __init__(
        self,
        settings: Settings,
        database: Database,
        model: EmbeddingModel,
        *,
        build_model: Callable[[str], EmbeddingModel] | None = None,
        observers: tuple[ServiceObserver, ...] | None = None,
        audit: AuditTrail | None = None,
    ) -> None:
        """`build_model` turns a spec into a model for model swaps (`reembed`); the
        composition root passes its registry's, and its audit trail (else one of its own)."""
        FixedDimensionality.check_model(model.identity)
        self.settings = settings
        self.database = database
        self.model = model
        self.log = EventSourcedPolicyLog.open(database)
        self.progress = ProjectionProgress()
        model_id = model.identity.id
        self.read_model = PostgresPolicyReadModel(
            database,
            model_id,
            mode=settings.policy_search_mode,
            ef_search=settings.policy_hnsw_ef_search,
        )
        self.service = PolicyService(
            PolicyPorts(
                log=self.log,
                read_model=self.read_model,
                waiter=TrackingWaiter(
                    self.progress, lambda: read_tracking_position(database, model_id)
                ),
                models=PostgresPolicyModelStore(database, self.log, build_model or _no_swaps),
                projectors=self._projector,
                distribution=PostgresPolicySimilarityDistribution(database, model_id),
            ),
            model,
            cursors=CursorCodec(load_cursor_key(database)),
            audit=audit if audit is not None else PostgresAuditTrail(database),
            max_content_chars=settings.policy_max_content_chars,
            wait_timeout=settings.projection_wait_timeout,
            search_timeout=settings.search_timeout,
            default_threshold=settings.policy_similarity_threshold,
            max_future_skew=timedelta(seconds=settings.max_future_skew),
            observers=(PolicyMetrics(), ServiceLog()) if observers is None else observers,
        )
        self._workers = PolicyWorkers(self.service)

    def _projector(self) -> PolicyProjector:
        """The active model's projector, sharing the process's event log (its library pool)
        and announcing its commits to the writers waiting here."""
        return PolicyProjector(
            self.database, self.model, self.log, progress=self.progress, shared_log=self.log
        )

    def routes(self) -> list[BaseRoute]:
        from memory.entrypoints.http.policy_routes import policy_routes

        return policy_routes(
            self.service,
            search_timeout=self.settings.search_timeout,
            max_content_chars=self.settings.policy_max_content_chars,
        )

    def workers(self) -> list[Worker]:
        return self._workers.workers()

    def health(self) -> dict[str, Any]:
        projection = self.service.projection_status()
        return {
            "model": self.model.status().as_health(),
            "projector": {
                "model": projection.model,
                "role": projection.role,
                "running_here": projection.running_here,
                "position": projection.position,
                "head": projection.head,
                "lag_events": projection.lag_events,
            },
            "search_mode": self.settings.policy_search_mode,
        }

    def request_stop(self) -> None:
        """Nothing to do early: the projector works in short transactions and stops when
        its worker is cancelled."""

    def close(self) -> None:
        self.log.close()


def _no_swaps(spec: str) -> EmbeddingModel:
    raise RuntimeError("this policy runtime was built without a model registry")


def build(
    settings: Settings, database: Database, models: ModelSource, *, audit: AuditTrail | None = None
) -> PolicyRuntime:
    started = time.perf_counter()
    runtime = PolicyRuntime(
        settings, database, models.get(settings.policy_model), build_model=models.get, audit=audit
    )
    log.info(
        "policy memory ready (model %s, %s search) in %.2fs",
        runtime.model.identity.id,
        settings.policy_search_mode,
        time.perf_counter() - started,
    )
    return runtime
