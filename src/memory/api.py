"""The in-process API: how a sibling bounded context uses `memory` without HTTP.

    import memory.api

    me = memory.api.Actor("billing", "billing context")  # named in versions and the audit log
    with memory.api.open("postgresql://memory@db/memory") as mem:
        mem.policies.store("pw-reset", "Staff must reset their password every 90 days.", actor=me)
        mem.policies.store("late-fees", "...", actor=me, namespace="org:acme")  # acme's own
        answer = mem.policies.search("how often do I change my password?")
        mem.history.ingest("acme", [memory.api.ChatEvent(...)])
        hits = mem.history.search("acme", memory.api.HistoryQuery("password reset"))

`mem.policies` is the policy context's `PolicyService`, `mem.history` the history context's
`HistoryService`: the same services HTTP and the CLI call, built by the same composition
root (`memory.entrypoints.bootstrap`). Arguments and results are typed dataclasses; errors
are the project's typed ones (re-exported here), never HTTP ones. Nothing here imports
Starlette or uvicorn.

Background work (the policy projector, the history sweep and purge) is the caller's choice:
with `workers=False` (the default) another process runs them (a `memory serve`); with
`workers=True` they run here, in a background thread with its own event loop, until the
block ends. Without a running projector, policy writes still succeed but answer with
`searchable=False` after `projection_wait_timeout`.

An in-process caller covers every org: it writes global policies by default and any org's
with `namespace="org:<org_id>"`; one acting for a single org passes `reach=Reach("acme")`,
and is then held to that org's namespace as an org's API key is (docs/adr/0102).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from memory.application.embedding import (
    EmbeddingError,
    InputRejected,
    ModelMisconfigured,
    ModelUnavailable,
)
from memory.application.errors import DeadlineExceeded, ServiceUnavailable
from memory.application.history.drop_model import DropReport
from memory.application.history.feature_flags import GlobalFlag, OrgFlag
from memory.application.history.ingest import IngestResult
from memory.application.history.org_directory import OrgPage, OrgSummary
from memory.application.history.retention import PurgeReport, Retention
from memory.application.history.search_indexes import (
    OrgSearchIndexes,
    SearchIndexStatus,
    SearchIndexSummary,
)
from memory.application.history.service import HistoryService, OrgSweepStatus
from memory.application.history.sweep import SweepReport
from memory.application.policy.commands import NewPolicy, StoreReceipt
from memory.application.policy.ports import ProjectionBusy, ProjectorFailed, StoredModel
from memory.application.policy.queries import SearchAnswer
from memory.application.policy.reach import NamespaceForbidden, Reach
from memory.application.policy.service import PolicyService
from memory.domain.active_model import ActiveModelDrop
from memory.domain.audit.admin_action import Actor
from memory.domain.errors import AlreadyExists, DomainError, InvalidInput, NotFound
from memory.domain.history.chat_event import ChatEvent
from memory.domain.history.feature_flags import MODULE_FLAG, SEMANTIC_SEARCH_FLAG, GlobalState
from memory.domain.history.search import (
    HistoryHit,
    HistoryQuery,
    HistorySearchResult,
    MatchedBy,
    SemanticState,
)
from memory.domain.history.search_path import SearchIndexState
from memory.domain.policy.search import PolicyDocument, PolicySearch, SimilarityResult
from memory.domain.policy.versions import PolicyVersion, VersionChange
from memory.domain.relevance import ScriptGroup
from memory.entrypoints.bootstrap import Services, opened
from memory.entrypoints.warm_up import warm_up
from memory.entrypoints.workers.supervisor import WorkerThread
from memory.infrastructure.settings import Settings

__all__ = [
    "MODULE_FLAG",
    "SEMANTIC_SEARCH_FLAG",
    "ActiveModelDrop",
    "Actor",
    "AlreadyExists",
    "ChatEvent",
    "DeadlineExceeded",
    "DomainError",
    "DropReport",
    "EmbeddingError",
    "GlobalFlag",
    "GlobalState",
    "HistoryHit",
    "HistoryQuery",
    "HistorySearchResult",
    "HistoryService",
    "IngestResult",
    "InputRejected",
    "InvalidInput",
    "MatchedBy",
    "Memory",
    "ModelMisconfigured",
    "ModelUnavailable",
    "NamespaceForbidden",
    "NewPolicy",
    "NotFound",
    "OrgFlag",
    "OrgPage",
    "OrgSearchIndexes",
    "OrgSummary",
    "OrgSweepStatus",
    "PolicyDocument",
    "PolicySearch",
    "PolicyService",
    "PolicyVersion",
    "ProjectionBusy",
    "ProjectorFailed",
    "PurgeReport",
    "Reach",
    "Retention",
    "ScriptGroup",
    "SearchAnswer",
    "SearchIndexState",
    "SearchIndexStatus",
    "SearchIndexSummary",
    "SemanticState",
    "ServiceUnavailable",
    "Settings",
    "SimilarityResult",
    "StoreReceipt",
    "StoredModel",
    "SweepReport",
    "VersionChange",
    "open",
]


@dataclass(frozen=True)
class Memory:
    """Both contexts' services, open on one database. Use it inside `open(...)`'s block."""

    policies: PolicyService
    history: HistoryService


def _settings(settings_or_url: Settings | str | None) -> Settings:
    if isinstance(settings_or_url, Settings):
        return settings_or_url
    if settings_or_url is None:
        return Settings()
    return Settings(database_url=settings_or_url)


@contextmanager
def open(
    settings_or_url: Settings | str | None = None, *, workers: bool = False
) -> Iterator[Memory]:
    """Open both contexts: connect (or, with no database URL, start the embedded cluster
    under `settings.home`), migrate, load the models; close everything when the block ends.

    `settings_or_url`: a `Settings`, a libpq database URL (the other settings come from the
    `MEMORY_*` environment as for `memory serve`), or None for the environment alone.
    `workers=True` also runs the projector, the sweep and the purge in this process until
    the block ends."""
    with opened(_settings(settings_or_url)) as services, _background(services, enabled=workers):
        # The first searches must not pay for a cold model (docs/adr/0113).
        warm_up(services)
        yield Memory(policies=services.policy, history=services.history)


@contextmanager
def _background(services: Services, *, enabled: bool) -> Iterator[None]:
    if not enabled:
        yield
        return
    thread = WorkerThread(services.contexts, services.database)
    thread.start()
    try:
        yield
    finally:
        thread.stop()
