"""The composition root: the only place that picks adapters and wires both contexts."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from memory.entrypoints.runtime import ContextRuntime
from memory.infrastructure.embedding.factory import ModelRegistry
from memory.infrastructure.postgres.database import Database
from memory.infrastructure.postgres.pool_metrics import POOLS
from memory.infrastructure.settings import Settings

if TYPE_CHECKING:
    from memory.application.access.rate_limits import FailedAuthentications, RateLimits
    from memory.application.access.service import AccessService
    from memory.application.audit.ports import AuditTrail
    from memory.application.durability.erasure_journal import ErasureJournal, ReapplyErasures
    from memory.application.history.service import HistoryService
    from memory.application.model_check import FullTextRanker
    from memory.application.policy.service import PolicyService
    from memory.entrypoints.model_checks import ModelChecks
    from memory.entrypoints.warm_up import WarmUp
    from memory.infrastructure.embedding.vector_cache import CachedEmbeddingModel

log = logging.getLogger(__name__)

# The `pool` label of the shared connection pool's metrics.
SERVICE_POOL = "service"


@dataclass
class Services:
    settings: Settings
    database: Database
    models: ModelRegistry
    contexts: list[ContextRuntime] = field(default_factory=list)
    # What the warm-up did (memory.entrypoints.warm_up), once it ran; for /healthz.
    warm_up: WarmUp | None = None

    def context(self, name: str) -> ContextRuntime:
        for ctx in self.contexts:
            if ctx.name == name:
                return ctx
        raise KeyError(name)

    @property
    def policy(self) -> PolicyService:
        """The policy context's service (KeyError if it was not built)."""
        from memory.entrypoints.policy_runtime import PolicyRuntime

        runtime = self.context("policy")
        assert isinstance(runtime, PolicyRuntime)
        return runtime.service

    @cached_property
    def model_checks(self) -> ModelChecks:
        """The last `memory check` of each model, for /healthz (ADR 0114)."""
        from memory.entrypoints.model_checks import ModelChecks
        from memory.infrastructure.audit.audit_log import PostgresAuditTrail

        audit = self.audit
        assert isinstance(audit, PostgresAuditTrail)
        return ModelChecks(audit)

    @cached_property
    def audit(self) -> AuditTrail:
        """The audit trail (created with its event table on first use); erasures also go
        to the erasure journal when there is one (docs/adr/0106)."""
        from memory.application.durability.erasure_journal import JournalingAuditTrail
        from memory.entrypoints.erasure_journal import erasure_journal
        from memory.infrastructure.audit.audit_log import PostgresAuditTrail

        trail = PostgresAuditTrail(self.database)
        journal = erasure_journal(self.settings)
        return trail if journal is None else JournalingAuditTrail(trail, journal)

    @cached_property
    def access(self) -> AccessService:
        from memory.application.access.service import AccessService
        from memory.infrastructure.access.key_store import PostgresKeyStore
        from memory.infrastructure.access.metrics import AccessMetrics
        from memory.infrastructure.service_log import ServiceLog

        token = self.settings.admin_token
        return AccessService(
            PostgresKeyStore(self.database),
            self.audit,
            admin_token=None if token is None else token.get_secret_value(),
            observers=(AccessMetrics(), ServiceLog()),
        )

    @cached_property
    def rate_limits(self) -> RateLimits | None:
        from memory.application.access.rate_limits import RateLimits

        per_minute = self.settings.rate_limit_per_minute
        return None if per_minute is None else RateLimits(per_minute)

    @cached_property
    def failed_authentications(self) -> FailedAuthentications | None:
        from memory.application.access.rate_limits import FailedAuthentications

        per_minute = self.settings.failed_auth_per_minute
        return FailedAuthentications(per_minute) if per_minute > 0 else None

    @property
    def history(self) -> HistoryService:
        """The history context's service (KeyError if it was not built)."""
        from memory.entrypoints.history_runtime import HistoryRuntime

        runtime = self.context("history")
        assert isinstance(runtime, HistoryRuntime)
        return runtime.service

    def reapply_erasures(self, journal: ErasureJournal) -> ReapplyErasures:
        """The journaled erasures applied again to this database, through both contexts'
        services (after a restore, docs/adr/0106); senders named under this database's key."""
        from memory.application.durability.erasure_journal import ReapplyErasures
        from memory.domain.audit.admin_action import sender_reference
        from memory.infrastructure.durability.senders import PostgresSenders
        from memory.infrastructure.policy.secrets import load_erasure_key

        key = load_erasure_key(self.database)
        return ReapplyErasures(
            journal,
            self.history,
            self.policy,
            PostgresSenders(self.database),
            lambda org_id, sender: sender_reference(key, org_id, sender),
        )

    def close(self) -> None:
        for ctx in reversed(self.contexts):
            ctx.close()
        self.models.close()
        POOLS.unregister(SERVICE_POOL, self.database.pool)
        self.database.close()


def database_for(settings: Settings, database_url: str) -> Database:
    """The service's database on `database_url`, its pool not opened yet."""
    from memory.entrypoints.database_url import with_password

    return Database(
        database_url,
        # A direct URL only means something beside a configured (pooled) one.
        direct_url=(
            with_password(settings.database_direct_url, settings)
            if settings.database_url and settings.database_direct_url
            else None
        ),
        min_size=settings.pool_min_size,
        max_size=settings.pool_max_size,
        timeout=settings.database_timeout,
    )


def build_services(
    settings: Settings, database_url: str, *, contexts: tuple[str, ...] = ("policy", "history")
) -> Services:
    """Open the pool, migrate, load models and build the requested contexts. On failure,
    everything opened so far is closed again. A database that cannot be reached fails at
    once with `DatabaseUnavailable`; one that refuses this configuration (or holds a newer
    schema) with `DatabaseMisconfigured`."""
    from memory.entrypoints import history_runtime, policy_runtime

    database = database_for(settings, database_url)
    database.open()
    POOLS.register(SERVICE_POOL, database.pool)
    services = Services(settings, database, ModelRegistry(settings))
    try:
        applied = database.migrate()
        if applied:
            log.info("applied migrations: %s", ", ".join(applied))
        builders: dict[str, Callable[..., ContextRuntime]] = {
            "policy": policy_runtime.build,
            "history": history_runtime.build,
        }
        for name in contexts:
            services.contexts.append(
                builders[name](settings, database, services.models, audit=services.audit)
            )
    except BaseException:
        services.close()
        raise
    return services


@contextmanager
def opened(
    settings: Settings,
    *,
    contexts: tuple[str, ...] = ("policy", "history"),
    create_home: bool = True,
) -> Iterator[Services]:
    """The services on the configured database (or the home's embedded cluster, started and
    stopped around them): what the CLI commands and `memory.api.open` run on."""
    from memory.entrypoints.database_url import database_url

    with database_url(settings, create=create_home) as url:
        services = build_services(settings, url, contexts=contexts)
        try:
            yield services
        finally:
            services.close()


@dataclass(frozen=True)
class ModelCheckStores:
    """The database side of `memory check`: full-text search beside the model, and the audit
    trail its figures are recorded in (after migrating, so a fresh database has the table)."""

    full_text: FullTextRanker
    database: Database

    def audit_trail(self) -> AuditTrail:
        from memory.infrastructure.audit.audit_log import PostgresAuditTrail

        self.database.migrate()
        return PostgresAuditTrail(self.database)


class ModelCheckWiring:
    """What `memory check` runs on: any model the service can be configured with (its
    vectors of the fixed check texts cached under MEMORY_HOME/check-cache) and, on the
    configured database, one connection's stores. No context is built."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._registry = ModelRegistry(settings)

    def model(self, spec: str) -> CachedEmbeddingModel:
        """Raises `InvalidModelSpec` or `EmbeddingError` for a model that cannot be built."""
        from memory.infrastructure.embedding.vector_cache import CachedEmbeddingModel

        return CachedEmbeddingModel(self._registry.get(spec), self._settings.home / "check-cache")

    @contextmanager
    def stores(self) -> Iterator[ModelCheckStores]:
        from memory.entrypoints.database_url import database_url
        from memory.infrastructure.history.full_text_ranker import PostgresFullTextRanker

        settings = self._settings
        with database_url(settings, create=False) as url:
            database = Database(url, min_size=1, max_size=1, timeout=settings.database_timeout)
            database.open()
            try:
                yield ModelCheckStores(PostgresFullTextRanker(database), database)
            finally:
                database.close()

    def close(self) -> None:
        self._registry.close()
