"""`PolicyService`: the policy context's one application service.

HTTP routes, the `memory policies ...` commands and sibling contexts (through `memory.api`)
all call this and nothing else, so none of them holds logic the others lack. Each public
method reports one `ServiceCall` to the observers (metrics, logs).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from memory.application.audit.ports import AuditTrail
from memory.application.embedding import EmbeddingModel
from memory.application.observer import Observed, ServiceObserver
from memory.application.policy.administration import PolicyAdministration
from memory.application.policy.commands import NewPolicy, PolicyCommands, StoreReceipt
from memory.application.policy.deadline import Clock
from memory.application.policy.leadership import ProjectorLeadership, ProjectorStatus
from memory.application.policy.ports import (
    PolicyEventLog,
    PolicyModelStore,
    PolicyReadModel,
    PolicySimilarityDistribution,
    ProjectionWaiter,
    ProjectorFactory,
    ReembedProgress,
    ReembedReport,
    StoredModel,
)
from memory.application.policy.queries import PolicyPage, PolicyQueries, SearchAnswer
from memory.application.policy.reach import EVERY_ORG, Reach
from memory.domain.audit.admin_action import Actor
from memory.domain.errors import FieldChecks
from memory.domain.policy.cursor import CursorCodec
from memory.domain.policy.listing import StoredPolicy
from memory.domain.policy.namespace import PolicyNamespace
from memory.domain.policy.search import PolicyDocument, PolicySearch
from memory.domain.policy.versions import PolicyVersion
from memory.domain.time_range import DEFAULT_MAX_FUTURE_SKEW

CONTEXT = "policy"


@dataclass(frozen=True, slots=True)
class PolicyPorts:
    """The adapters the policy use cases run on (picked by the composition root)."""

    log: PolicyEventLog
    read_model: PolicyReadModel
    waiter: ProjectionWaiter
    models: PolicyModelStore
    projectors: ProjectorFactory
    # None: search results carry no relevance and `min_relevance` is not calibrated.
    distribution: PolicySimilarityDistribution | None = None


class PolicyService:
    """Store, update, search and fetch policies; inspect and swap the model's rows; lead
    the active model's projection (the policy worker's passes).

    Every policy method takes the caller's `reach` (the orgs its key covers; the default,
    every org, is the operator's and an in-process caller's) and the `namespace` it names
    (None: its home), and acts in that namespace only (docs/adr/0102). Writes take the
    `actor` their events and audit records name (docs/adr/0103).

    Errors are the project's typed ones: `InvalidInput` (a broken rule, naming the field),
    `NamespaceForbidden` (403, a namespace the caller may not use), `NotFound`,
    `AlreadyExists`, `DeadlineExceeded`, the embedding errors (`ModelUnavailable`, ...)
    and, for model operations, `ProjectionBusy`/`ProjectorFailed`.
    """

    def __init__(
        self,
        ports: PolicyPorts,
        model: EmbeddingModel,
        *,
        cursors: CursorCodec,
        audit: AuditTrail,
        max_content_chars: int,
        wait_timeout: float,
        search_timeout: float,
        default_threshold: float | None = None,
        max_future_skew: timedelta = DEFAULT_MAX_FUTURE_SKEW,
        clock: Clock = time.monotonic,
        wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        observers: Sequence[ServiceObserver] = (),
    ) -> None:
        """Writes wait up to `wait_timeout` for the projection; searches take at most
        `search_timeout` (`clock` measures it, `wall_clock` dates filters' instants).
        Writes, model drops and re-embeds are recorded in `audit` (docs/adr/0058)."""
        self._active_model = model.identity.id
        self._observed = Observed(CONTEXT, observers)
        self._commands = PolicyCommands(
            ports.log,
            model,
            ports.waiter,
            audit=audit,
            max_content_chars=max_content_chars,
            wait_timeout=wait_timeout,
        )
        self._queries = PolicyQueries(
            ports.log,
            ports.read_model,
            model,
            cursors,
            search_timeout=search_timeout,
            default_threshold=default_threshold,
            distribution=ports.distribution,
            clock=clock,
            wall_clock=wall_clock,
            max_future_skew=max_future_skew,
        )
        self._admin = PolicyAdministration(
            ports.models, active_model=self._active_model, audit=audit
        )
        self._projection = ProjectorLeadership(
            ports.projectors, ports.models, model_id=self._active_model
        )

    @property
    def active_model(self) -> str:
        return self._active_model

    def observe(self, observer: ServiceObserver) -> None:
        self._observed.add(observer)

    # Commands ---------------------------------------------------------------------------

    def store(
        self,
        policy_id: str,
        content: str,
        metadata: Any = None,
        *,
        actor: Actor,
        reach: Reach = EVERY_ORG,
        namespace: str | None = None,
    ) -> StoreReceipt:
        """Store a new policy (409 `AlreadyExists` if it exists in that namespace). Returns
        once the search read model reflects it, or after `projection_wait_timeout` with
        `searchable=False`."""

        def run() -> StoreReceipt:
            target = reach.writing(namespace)
            return self._commands.store(policy_id, content, metadata, actor=actor, namespace=target)

        return self._observed.run("store", run)

    def store_many(
        self,
        policies: Sequence[NewPolicy],
        *,
        actor: Actor,
        reach: Reach = EVERY_ORG,
        namespace: str | None = None,
    ) -> list[StoreReceipt]:
        """Store several new policies of one namespace, all or none, embedding them in one
        model call."""

        def run() -> list[StoreReceipt]:
            target = reach.writing(namespace)
            return self._commands.store_many(policies, actor=actor, namespace=target)

        return self._observed.run("store_many", run)

    def update(
        self,
        policy_id: str,
        content: str,
        metadata: Any = None,
        *,
        actor: Actor,
        reach: Reach = EVERY_ORG,
        namespace: str | None = None,
    ) -> StoreReceipt:
        """A new version: new content is re-embedded, new metadata alone is not; `metadata`
        None keeps the current one; a change of nothing records nothing."""

        def run() -> StoreReceipt:
            target = reach.writing(namespace)
            return self._commands.update(
                policy_id, content, metadata, actor=actor, namespace=target
            )

        return self._observed.run("update", run)

    def check_store(
        self,
        policy_id: str | None = None,
        content: str | None = None,
        metadata: Any = None,
        namespace: str | None = None,
    ) -> None:
        """`store`'s rules alone, over the fields given (None: not checked): `InvalidInput`
        naming every field that breaks one. Pure; changes nothing. For a door that found
        other fields of the wrong type, so that one error names them all (docs/adr/0088)."""
        _with_namespace(namespace, lambda: self._commands.check_new(policy_id, content, metadata))

    def check_update(
        self,
        policy_id: str | None = None,
        content: str | None = None,
        metadata: Any = None,
        namespace: str | None = None,
    ) -> None:
        """`update`'s rules alone, as `check_store`."""
        _with_namespace(
            namespace, lambda: self._commands.check_update(policy_id, content, metadata)
        )

    def delete(
        self,
        policy_id: str,
        *,
        actor: Actor,
        reach: Reach = EVERY_ORG,
        namespace: str | None = None,
    ) -> bool:
        """Delete a policy (`NotFound` if unknown or deleted already): a `Deleted` event; its
        rows leave every model's read model. True once the active model's read model
        reflects it. Storing the id again later starts a new history (docs/adr/0063). The
        event and its audit record commit in one transaction (docs/adr/0079)."""

        def run() -> bool:
            target = reach.writing(namespace)
            deletion = self._commands.record_deletion(policy_id, actor=actor, namespace=target)
            return self._commands.await_projection(deletion.notification_id)

        return self._observed.run("delete", run)

    # Queries ----------------------------------------------------------------------------

    def get(
        self, policy_id: str, *, reach: Reach = EVERY_ORG, namespace: str | None = None
    ) -> StoredPolicy:
        """The current version of a policy (the namespace's own, else the global one);
        `NotFound` if unknown or deleted."""
        return self._observed.run(
            "get",
            lambda: self._queries.get(policy_id, namespace=reach.reading(namespace)),
        )

    def list_policies(
        self,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        source: str | None = None,
        tag: str | None = None,
        updated_since: datetime | None = None,
        reach: Reach = EVERY_ORG,
        namespace: str | None = None,
    ) -> PolicyPage:
        """Stored policies the namespace sees (its own and the global ones), newest first,
        a page at a time (`next_cursor` for the next)."""
        return self._observed.run(
            "list",
            lambda: self._queries.list_policies(
                limit=limit,
                cursor=cursor,
                source=source,
                tag=tag,
                updated_since=updated_since,
                namespace=reach.reading(namespace),
            ),
        )

    def search(
        self,
        search: PolicySearch | str,
        *,
        reach: Reach = EVERY_ORG,
        namespace: str | None = None,
    ) -> SearchAnswer:
        """Ranked policies the namespace sees (its own and the global ones) at or above
        the threshold, within `MEMORY_SEARCH_TIMEOUT`. A plain text is the search with
        every option at its default."""
        asked = PolicySearch(search) if isinstance(search, str) else search
        return self._observed.run(
            "search",
            lambda: self._queries.search(asked, namespace=reach.reading(namespace)),
        )

    def check_search(self, search: PolicySearch, *, namespace: str | None = None) -> None:
        """`search`'s rules alone, as `check_store` (a `query` not given is not checked)."""
        _with_namespace(namespace, lambda: self._queries.search_request(search))

    def check_listing(
        self,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        source: str | None = None,
        tag: str | None = None,
        updated_since: datetime | None = None,
        namespace: str | None = None,
    ) -> None:
        """`list_policies`' rules alone, as `check_store`."""
        _with_namespace(
            namespace,
            lambda: self._queries.listing_request(
                limit=limit, cursor=cursor, source=source, tag=tag, updated_since=updated_since
            ),
        )

    def get_by_embedding(
        self,
        embedding_ref: str,
        *,
        origin: str = "direct",
        query: str | None = None,
        reach: Reach = EVERY_ORG,
        namespace: str | None = None,
    ) -> PolicyDocument:
        """The full policy behind an embedding reference, if the namespace sees it; with
        `origin="search"` and the query, also its similarity to the query."""
        return self._observed.run(
            "get_by_embedding",
            lambda: self._queries.get_by_embedding(
                embedding_ref, origin=origin, query=query, namespace=reach.reading(namespace)
            ),
        )

    def versions(
        self, policy_id: str, *, reach: Reach = EVERY_ORG, namespace: str | None = None
    ) -> list[PolicyVersion]:
        """Every version of a policy (the namespace's own, else the global one), oldest
        first (its event history), each naming its actor."""
        return self._observed.run(
            "versions",
            lambda: self._queries.versions(policy_id, namespace=reach.reading(namespace)),
        )

    # Model operations ---------------------------------------------------------------------

    def models(self) -> list[StoredModel]:
        """Every model with rows or a tracking table (a re-embed that failed before its
        first row leaves only the table), and the active one, with their positions."""
        return self._observed.run("models", self._admin.models)

    def stored_model_id(self, model: str) -> str:
        """The identity a model spec's rows are stored under (`ollama:bge-m3:latest` is
        `ollama:bge-m3`; docs/adr/0010)."""
        return self._admin.stored_model_id(model)

    def untied_tracking_tables(self) -> list[str]:
        """Tracking tables no model can be tied to (left by a re-embed before tables were
        labelled): `drop_model(table name)` removes one."""
        return self._observed.run("tracking_tables", self._admin.untied_tracking_tables)

    def log_head(self) -> int | None:
        """Notification id of the newest event in the policy log (None: empty)."""
        return self._observed.run("log_head", self._admin.log_head)

    def reembed(
        self,
        model: str,
        *,
        actor: Actor,
        rebuild: bool = False,
        on_progress: ReembedProgress | None = None,
    ) -> ReembedReport:
        """Embed every policy's current version with `model` (a spec) into its own rows;
        resumable. Search keeps using the active model until the configuration switches.
        The start is recorded in the audit trail (the replay is many transactions)."""
        return self._observed.run(
            "reembed",
            lambda: self._admin.reembed(
                model, actor=actor, rebuild=rebuild, on_progress=on_progress
            ),
        )

    def drop_model(self, model: str, *, actor: Actor) -> tuple[str, int]:
        """Delete another model's rows, index and position: (its stored id, rows deleted).
        Also takes the name of a tracking table no model is tied to, and drops it. Refuses
        the active model (`ActiveModelDrop`); `NotFound` when it has neither rows nor a
        tracking table."""
        return self._observed.run("drop_model", lambda: self._admin.drop_model(model, actor=actor))

    # The active model's projection (the policy worker's steps, docs/adr/0054) ------------

    def lead_projection(self) -> bool:
        """Take the active model's lease and start projecting; False while another process
        leads (this one stands by). Not observed: a standby tries every second."""
        return self._projection.try_lead()

    def projection_alive(self) -> bool:
        """Whether this process still leads (its lease's connection is up)."""
        return self._projection.lease_alive()

    def check_projection(self) -> ProjectorStatus:
        """`ProjectorFailed` if this process's projection stopped or lost its lease; else
        where it stands (the metrics publish its lag from this call)."""
        return self._observed.run("projector_check", self._projection.check)

    def stop_projection(self) -> None:
        """Stop this process's projection (if it leads) and release the lease."""
        self._projection.stop()

    def projection_status(self) -> ProjectorStatus:
        """The active model's projection: this process's role, position and log head."""
        return self._projection.status()


def _with_namespace(namespace: str | None, check: Callable[[], object]) -> None:
    """Run a use case's rule check and the namespace's, naming every failure in one error."""
    checks = FieldChecks()
    if namespace is not None:
        checks.run(lambda: PolicyNamespace.parse(namespace))
    checks.run(check)
    checks.raise_any()
