"""`PolicyService`: the policy context's one application service.

HTTP routes, the `memory policies ...` commands and sibling contexts (through `memory.api`)
all call this and nothing else, so none of them holds logic the others lack. Each public
method reports one `ServiceCall` to the observers (metrics, logs).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from memory.application.audit.ports import AuditTrail
from memory.application.observer import Observed, ServiceObserver
from memory.application.policy.commands import NewPolicy, PolicyCommands, StoreReceipt
from memory.application.policy.ports import (
    PolicyModelStore,
    ReembedProgress,
    ReembedReport,
    StoredModel,
)
from memory.application.policy.queries import PolicyPage, PolicyQueries, SearchAnswer
from memory.application.policy.reach import EVERY_ORG, Reach
from memory.domain.active_model import refuse_dropping_active
from memory.domain.audit.admin_action import Action, Actor, AuditedChange
from memory.domain.errors import FieldChecks, NotFound
from memory.domain.policy.listing import StoredPolicy
from memory.domain.policy.namespace import PolicyNamespace
from memory.domain.policy.search import PolicyDocument
from memory.domain.policy.versions import PolicyVersion

CONTEXT = "policy"
ACTIVE_MODEL_SETTING = "MEMORY_POLICY_MODEL"


class PolicyService:
    """Store, update, search and fetch policies; inspect and swap the model's rows.

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
        commands: PolicyCommands,
        queries: PolicyQueries,
        models: PolicyModelStore,
        *,
        active_model: str,
        audit: AuditTrail,
        observers: Sequence[ServiceObserver] = (),
    ) -> None:
        """Model drops and re-embeds are recorded in `audit` (docs/adr/0058)."""
        self._commands = commands
        self._queries = queries
        self._models = models
        self._active_model = active_model
        self._audit = audit
        self._observed = Observed(CONTEXT, observers)

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
        query: str,
        *,
        similarity_threshold: float | None = None,
        limit: int | None = None,
        offset: int | None = None,
        cursor: str | None = None,
        max_results: int | None = None,
        filter: Any = None,
        reach: Reach = EVERY_ORG,
        namespace: str | None = None,
        min_relevance: float | None = None,
    ) -> SearchAnswer:
        """Ranked policies the namespace sees (its own and the global ones) at or above
        the threshold, within `MEMORY_SEARCH_TIMEOUT`."""
        return self._observed.run(
            "search",
            lambda: self._queries.search(
                query,
                similarity_threshold=similarity_threshold,
                limit=limit,
                offset=offset,
                cursor=cursor,
                max_results=max_results,
                filter=filter,
                namespace=reach.reading(namespace),
                min_relevance=min_relevance,
            ),
        )

    def check_search(
        self,
        query: str | None = None,
        *,
        similarity_threshold: float | None = None,
        limit: int | None = None,
        offset: int | None = None,
        cursor: str | None = None,
        max_results: int | None = None,
        filter: Any = None,
        namespace: str | None = None,
        min_relevance: float | None = None,
    ) -> None:
        """`search`'s rules alone, as `check_store`."""
        _with_namespace(
            namespace,
            lambda: self._queries.search_request(
                query,
                similarity_threshold=similarity_threshold,
                limit=limit,
                offset=offset,
                cursor=cursor,
                max_results=max_results,
                filter=filter,
                min_relevance=min_relevance,
            ),
        )

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

    # Model operations -------------------------------------------------------------------

    def models(self) -> list[StoredModel]:
        """Every model with rows or a tracking table (a re-embed that failed before its
        first row leaves only the table), and the active one, with their positions."""

        def run() -> list[StoredModel]:
            rows = self._models.rows_per_model()
            known = sorted(set(rows) | {self._active_model})
            tracked = {t.model for t in self._models.tracking_tables(known) if t.model}
            return [
                StoredModel(
                    model=model_id,
                    rows=rows.get(model_id, 0),
                    position=self._models.position(model_id),
                    active=model_id == self._active_model,
                )
                for model_id in sorted(set(known) | tracked)
            ]

        return self._observed.run("models", run)

    def stored_model_id(self, model: str) -> str:
        """The identity a model spec's rows are stored under (`ollama:bge-m3:latest` is
        `ollama:bge-m3`; docs/adr/0010)."""
        return self._models.stored_id(model)

    def untied_tracking_tables(self) -> list[str]:
        """Tracking tables no model can be tied to (left by a re-embed before tables were
        labelled): `drop_model(table name)` removes one."""

        def run() -> list[str]:
            known = sorted(set(self._models.rows_per_model()) | {self._active_model})
            return [t.table for t in self._models.tracking_tables(known) if t.model is None]

        return self._observed.run("tracking_tables", run)

    def log_head(self) -> int | None:
        """Notification id of the newest event in the policy log (None: empty)."""
        return self._observed.run("log_head", self._models.head)

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

        def started() -> tuple[None, AuditedChange]:
            model_id = self._models.stored_id(model)
            return None, AuditedChange(
                target=model_id, before=None, after={"model": model_id, "rebuild": rebuild}
            )

        def run() -> ReembedReport:
            self._audit.record(actor, Action.REEMBED_STARTED, started)
            return self._models.reembed(model, rebuild=rebuild, on_progress=on_progress)

        return self._observed.run("reembed", run)

    def drop_model(self, model: str, *, actor: Actor) -> tuple[str, int]:
        """Delete another model's rows, index and position: (its stored id, rows deleted).
        Also takes the name of a tracking table no model is tied to, and drops it. Refuses
        the active model (`ActiveModelDrop`); `NotFound` when it has neither rows nor a
        tracking table."""

        def run() -> tuple[str, int]:
            stored = self._models.rows_per_model()
            known = sorted(set(stored) | {self._active_model})
            tables = self._models.tracking_tables(known)
            if any(t.table == model and t.model is None for t in tables):

                def drop_table() -> tuple[tuple[str, int], AuditedChange]:
                    self._models.drop_tracking_table(model)
                    return (model, 0), AuditedChange(
                        target=model, before=None, after={"tracking_table_dropped": model}
                    )

                return self._audit.record(actor, Action.MODEL_DROPPED, drop_table)
            model_id = self._models.stored_id(model)
            refuse_dropping_active(
                model_id, self._active_model, context=CONTEXT, setting=ACTIVE_MODEL_SETTING
            )
            if model_id not in stored and not any(t.model == model_id for t in tables):
                known_text = ", ".join(stored) or "none"
                raise NotFound(
                    f"no rows or tracking table for model {model_id} (stored: {known_text})",
                    details={"model": model_id, "stored": sorted(stored)},
                )

            def change() -> tuple[tuple[str, int], AuditedChange]:
                deleted = self._models.drop(model_id)
                return (model_id, deleted), AuditedChange(
                    target=model_id,
                    before={"rows": stored.get(model_id, 0)},
                    after={"rows_deleted": deleted},
                )

            return self._audit.record(actor, Action.MODEL_DROPPED, change)

        return self._observed.run("drop_model", run)


def _with_namespace(namespace: str | None, check: Callable[[], object]) -> None:
    """Run a use case's rule check and the namespace's, naming every failure in one error."""
    checks = FieldChecks()
    if namespace is not None:
        checks.run(lambda: PolicyNamespace.parse(namespace))
    checks.run(check)
    checks.raise_any()
