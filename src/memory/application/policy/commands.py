"""StoreEmbedding, UpdateEmbedding and deletion: validate, embed (outside any transaction),
record the event and its audit record in one transaction (docs/adr/0103), then wait until
the read model reflects it so that a search right after finds it.

Every write names its namespace (docs/adr/0102) and its actor, which the event carries."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any
from uuid import UUID

from memory.application.audit.ports import AuditTrail
from memory.application.embedding import EmbeddingModel
from memory.application.policy.ports import PolicyEventLog, ProjectionWaiter, RecordConflict
from memory.domain.audit.admin_action import Action, Actor, AuditedChange
from memory.domain.embedding import EmbeddingVector
from memory.domain.errors import AlreadyExists, FieldChecks, InvalidInput, NotFound
from memory.domain.policy.aggregate import PolicyEmbedding
from memory.domain.policy.content import PolicyContent
from memory.domain.policy.dimensionality import FixedDimensionality
from memory.domain.policy.embedding_ref import embedding_ref_for
from memory.domain.policy.metadata import PolicyMetadata
from memory.domain.policy.namespace import GLOBAL, PolicyAddress, PolicyNamespace
from memory.domain.policy.policy_id import PolicyId

log = logging.getLogger(__name__)

# A concurrent update of the same policy makes `save` fail; the update is re-applied to the
# newer version this many times in all before the conflict is reported (409).
UPDATE_ATTEMPTS = 3


@dataclass(frozen=True)
class StoreReceipt:
    """What a write returns. `searchable` is False when the projection did not catch up
    within `projection_wait_timeout`: the write is recorded and will become searchable."""

    policy_id: str
    embedding_ref: UUID
    version: int
    model: str
    dimensions: int
    stored_at: datetime
    searchable: bool
    namespace: PolicyNamespace = GLOBAL


@dataclass(frozen=True)
class Deletion:
    """A recorded `Deleted` event: the policy, the version it made, its position in the log."""

    policy_id: str
    version: int
    notification_id: int
    namespace: PolicyNamespace = GLOBAL


ParsedPolicy = tuple[PolicyId, PolicyContent, PolicyMetadata]


@dataclass(frozen=True)
class NewPolicy:
    policy_id: str
    content: str
    metadata: Any = None


class PolicyCommands:
    def __init__(
        self,
        log: PolicyEventLog,
        model: EmbeddingModel,
        waiter: ProjectionWaiter,
        *,
        audit: AuditTrail,
        max_content_chars: int,
        wait_timeout: float,
    ) -> None:
        """Every write is recorded in `audit` in the transaction of its event."""
        FixedDimensionality.check_model(model.identity)
        self._audit = audit
        self._log = log
        self._model = model
        self._waiter = waiter
        self._max_content_chars = max_content_chars
        self._wait_timeout = wait_timeout

    def store(
        self,
        policy_id: str,
        content: str,
        metadata: Any = None,
        *,
        actor: Actor,
        namespace: PolicyNamespace = GLOBAL,
    ) -> StoreReceipt:
        return self.store_many(
            [NewPolicy(policy_id, content, metadata)], actor=actor, namespace=namespace
        )[0]

    def store_many(
        self,
        policies: Sequence[NewPolicy],
        *,
        actor: Actor,
        namespace: PolicyNamespace = GLOBAL,
    ) -> list[StoreReceipt]:
        """Store several new policies of one namespace in one transaction (all or none, with
        one audit record each), embedding their texts in one model call. `store` is the
        one-policy case."""
        parsed = self._parse_many(policies)
        deleted = self._deleted_ones(namespace, [pid for pid, _, _ in parsed])
        vectors = self._embed([content for _, content, _ in parsed])
        aggregates, notification_id = self._audit.record_many(
            actor,
            Action.POLICY_STORED,
            partial(self._record_stores, namespace, parsed, vectors, deleted, actor),
        )
        searchable = self._waiter.wait(notification_id, self._wait_timeout)
        return [self._receipt(a, searchable) for a in aggregates]

    def _parse_many(self, policies: Sequence[NewPolicy]) -> list[ParsedPolicy]:
        checks = FieldChecks()
        checked = [
            checks.run(partial(self._parse_new, p, i if len(policies) > 1 else None))
            for i, p in enumerate(policies)
        ]
        checks.raise_any()  # every bad field of every policy, in one error
        parsed = [p for p in checked if p is not None]
        ids = [pid for pid, _, _ in parsed]
        if len(set(ids)) != len(ids):
            raise InvalidInput("policies", "the same policy_id appears twice")
        return parsed

    def _deleted_ones(
        self, namespace: PolicyNamespace, ids: Sequence[PolicyId]
    ) -> dict[PolicyId, PolicyEmbedding]:
        """The deleted policies among `ids` (stored again on their aggregate); 409 for one
        that exists."""
        deleted: dict[PolicyId, PolicyEmbedding] = {}
        for pid in ids:
            aggregate = self._log.get(PolicyAddress(namespace, pid))
            if aggregate is None:
                continue
            if not aggregate.deleted:
                raise AlreadyExists(
                    f"policy {pid} already exists in namespace {namespace}; update it with "
                    f"PUT /v1/policies/{pid}",
                    details={"policy_id": str(pid), "namespace": namespace.text},
                )
            deleted[pid] = aggregate
        return deleted

    def _record_stores(
        self,
        namespace: PolicyNamespace,
        parsed: Sequence[ParsedPolicy],
        vectors: Sequence[EmbeddingVector],
        deleted: dict[PolicyId, PolicyEmbedding],
        actor: Actor,
    ) -> tuple[tuple[list[PolicyEmbedding], int], list[AuditedChange]]:
        """The stores' events, saved in the audit trail's transaction, and their records."""
        aggregates = []
        for (pid, content, metadata), vector in zip(parsed, vectors, strict=True):
            again = deleted.get(pid)
            if again is None:
                aggregates.append(
                    PolicyEmbedding.store(
                        PolicyAddress(namespace, pid),
                        content,
                        metadata,
                        self._model.identity,
                        vector,
                        actor=actor,
                    )
                )
            else:
                # A deleted id starts a new history on the same aggregate (docs/adr/0063).
                again.store_again(content, metadata, self._model.identity, vector, actor=actor)
                aggregates.append(again)
        try:
            notification_id = self._log.save(*aggregates)
        except RecordConflict:
            raise AlreadyExists(
                "a policy with this id was stored concurrently",
                details={"policy_ids": [str(pid) for pid, _, _ in parsed]},
            ) from None
        audited = [
            _audited(a, before=None if a.version == 1 else {"version": a.version - 1})
            for a in aggregates
        ]
        return (aggregates, notification_id), audited

    def update(
        self,
        policy_id: str,
        content: str,
        metadata: Any = None,
        *,
        actor: Actor,
        namespace: PolicyNamespace = GLOBAL,
    ) -> StoreReceipt:
        """New content is re-embedded; unchanged content with new metadata records a
        metadata-only version (no embedding); `metadata` omitted keeps the current one; a
        request that changes nothing records nothing and returns the current version."""
        checks = FieldChecks()
        parsed_id, parsed_content, new_metadata = self._parse_update(
            checks, policy_id, content, metadata
        )
        checks.raise_any()
        assert parsed_id is not None and parsed_content is not None
        address, new_content = PolicyAddress(namespace, parsed_id), parsed_content
        vector: EmbeddingVector | None = None
        changed: Callable[[], object]
        for attempt in range(1, UPDATE_ATTEMPTS + 1):
            aggregate = self._existing(address, "store it with POST /v1/policies")
            resulting_metadata = aggregate.metadata if new_metadata is None else new_metadata
            if aggregate.has_new_content(new_content):
                if vector is None:  # embedded outside the transaction, once
                    vector = self._embed([new_content])[0]
                changed = partial(
                    aggregate.update_content,
                    new_content,
                    resulting_metadata,
                    self._model.identity,
                    vector,
                    actor=actor,
                )
            elif aggregate.metadata_json != resulting_metadata.canonical():
                changed = partial(aggregate.update_metadata, resulting_metadata, actor=actor)
            else:
                head = self._log.head()
                searchable = head is None or self._waiter.wait(head, self._wait_timeout)
                return self._receipt(aggregate, searchable)
            try:
                notification_id = self._audit.record(
                    actor, Action.POLICY_UPDATED, partial(self._save_change, aggregate, changed)
                )
            except RecordConflict:
                log.info("policy %s changed concurrently (attempt %d)", address, attempt)
                continue
            searchable = self._waiter.wait(notification_id, self._wait_timeout)
            return self._receipt(aggregate, searchable)
        raise AlreadyExists(
            f"policy {address} is being changed concurrently; retry",
            details={"policy_id": str(parsed_id), "namespace": namespace.text},
        )

    def _save_change(
        self, aggregate: PolicyEmbedding, change: Callable[[], object]
    ) -> tuple[int, AuditedChange]:
        before = aggregate.version
        change()
        notification_id = self._log.save(aggregate)
        return notification_id, _audited(aggregate, before={"version": before})

    def check_new(
        self, policy_id: str | None = None, content: str | None = None, metadata: Any = None
    ) -> None:
        """`store`'s rules over the fields given (None: not given, not checked):
        `InvalidInput` naming each one that breaks a rule; changes nothing."""
        checks = FieldChecks()
        self._parse_fields(checks, "", policy_id, content, metadata)
        checks.raise_any()

    def check_update(
        self, policy_id: str | None = None, content: str | None = None, metadata: Any = None
    ) -> None:
        """`update`'s rules over the fields given, as `check_new`."""
        checks = FieldChecks()
        self._parse_update(checks, policy_id, content, metadata)
        checks.raise_any()

    def delete(self, policy_id: str, *, actor: Actor, namespace: PolicyNamespace = GLOBAL) -> bool:
        """Record the deletion; its rows leave every model's read model. Returns whether the
        active model's read model reflected it within `projection_wait_timeout`."""
        deletion = self.record_deletion(policy_id, actor=actor, namespace=namespace)
        return self.await_projection(deletion.notification_id)

    def record_deletion(
        self, policy_id: str, *, actor: Actor, namespace: PolicyNamespace = GLOBAL
    ) -> Deletion:
        """Record the `Deleted` event and its audit record in one transaction
        (docs/adr/0079) without waiting for the projection."""
        address = PolicyAddress(namespace, PolicyId.parse(policy_id))
        for attempt in range(1, UPDATE_ATTEMPTS + 1):
            aggregate = self._existing(address, "nothing to delete")

            def change(aggregate: PolicyEmbedding = aggregate) -> tuple[Deletion, AuditedChange]:
                aggregate.delete(actor=actor)
                notification_id = self._log.save(aggregate)
                deletion = Deletion(
                    aggregate.policy_id, aggregate.version, notification_id, namespace
                )
                return deletion, _audited(
                    aggregate, before={"version": aggregate.version - 1}, deleted=True
                )

            try:
                return self._audit.record(actor, Action.POLICY_DELETED, change)
            except RecordConflict:
                log.info("policy %s changed concurrently (attempt %d)", address, attempt)
        raise AlreadyExists(
            f"policy {address} is being changed concurrently; retry",
            details={"policy_id": str(address.policy_id), "namespace": namespace.text},
        )

    def await_projection(self, notification_id: int) -> bool:
        """Whether the active model's read model reached `notification_id` in time."""
        return self._waiter.wait(notification_id, self._wait_timeout)

    def _existing(self, address: PolicyAddress, hint: str) -> PolicyEmbedding:
        aggregate = self._log.get(address)
        if aggregate is None or aggregate.deleted:
            state = "does not exist" if aggregate is None else "was deleted"
            raise NotFound(
                f"policy {address} {state}; {hint}",
                details={
                    "policy_id": str(address.policy_id),
                    "namespace": address.namespace.text,
                },
            )
        return aggregate

    def _parse_new(
        self, policy: NewPolicy, index: int | None
    ) -> tuple[PolicyId, PolicyContent, PolicyMetadata]:
        prefix = "" if index is None else f"policies.{index}."
        checks = FieldChecks()
        pid, content, metadata = self._parse_fields(
            checks, prefix, policy.policy_id, policy.content, policy.metadata
        )
        checks.raise_any()
        assert pid is not None and content is not None and metadata is not None
        return pid, content, metadata

    def _parse_fields(
        self,
        checks: FieldChecks,
        prefix: str,
        policy_id: str | None,
        content: str | None,
        metadata: Any,
    ) -> tuple[PolicyId | None, PolicyContent | None, PolicyMetadata | None]:
        """Each field's rule, every failure kept in `checks`; a field given as None (an id or
        content the caller could not give) is not checked."""
        pid = (
            None
            if policy_id is None
            else checks.run(partial(PolicyId.parse, policy_id, field=f"{prefix}policy_id"))
        )
        parsed_content = (
            None
            if content is None
            else checks.run(
                partial(
                    PolicyContent.parse,
                    content,
                    max_chars=self._max_content_chars,
                    field=f"{prefix}content",
                )
            )
        )
        parsed_metadata = checks.run(
            partial(PolicyMetadata.parse, metadata, field=f"{prefix}metadata")
        )
        return pid, parsed_content, parsed_metadata

    def _parse_update(
        self, checks: FieldChecks, policy_id: str | None, content: str | None, metadata: Any
    ) -> tuple[PolicyId | None, PolicyContent | None, PolicyMetadata | None]:
        # Metadata omitted keeps the current one: None is no new metadata, not an empty one.
        pid, parsed_content, _ = self._parse_fields(checks, "", policy_id, content, None)
        new_metadata = (
            None if metadata is None else checks.run(partial(PolicyMetadata.parse, metadata))
        )
        return pid, parsed_content, new_metadata

    def _embed(self, contents: Sequence[PolicyContent]) -> list[EmbeddingVector]:
        vectors = self._model.embed_documents([c.text for c in contents])
        if len(vectors) != len(contents):
            raise RuntimeError(
                f"model {self._model.identity.id} returned {len(vectors)} vectors "
                f"for {len(contents)} texts"
            )
        return [FixedDimensionality.check_vector(self._model.identity, v) for v in vectors]

    @staticmethod
    def _receipt(aggregate: PolicyEmbedding, searchable: bool) -> StoreReceipt:
        return StoreReceipt(
            policy_id=aggregate.policy_id,
            embedding_ref=embedding_ref_for(aggregate.id),
            version=aggregate.version,
            model=aggregate.model,
            dimensions=len(aggregate.vector),
            stored_at=aggregate.modified_on,
            searchable=searchable,
            namespace=aggregate.namespace,
        )


def _audited(aggregate: PolicyEmbedding, *, before: Any, deleted: bool = False) -> AuditedChange:
    """A policy write as the audit trail records it: the policy id, its namespace (and the
    org, for an org's policy) and versions; never content or metadata (docs/adr/0103)."""
    after: dict[str, Any] = {"namespace": aggregate.namespace.text, "version": aggregate.version}
    if deleted:
        after["deleted"] = True
    return AuditedChange(
        target=aggregate.policy_id,
        before=before,
        after=after,
        org_id=aggregate.namespace.org_id,
    )
