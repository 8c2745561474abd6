"""`policy_embeddings` as the projection writes it: rows and the projection's position in
one transaction, so a crash between the two can neither skip nor repeat an event.

The library's connection pool has no hook to register pgvector types, so vectors are bound
as text and cast to `halfvec` in SQL.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast
from uuid import UUID

from eventsourcing.persistence import Tracking
from eventsourcing.postgres import PostgresDatastore
from opentelemetry import trace
from psycopg import Cursor
from psycopg.sql import SQL
from psycopg.types.json import Jsonb

from memory.application.policy.projection import (
    MetadataRevision,
    PolicyEmbeddingsView,
    PolicyRow,
)
from memory.infrastructure.postgres.event_persistence import OutageAwareTrackingRecorder

_UPSERT = SQL(
    "INSERT INTO policy_embeddings (embedding_ref, model, namespace, policy_id, version,"
    " embedding, title, source, tags, metadata, content, content_sha256, created_at,"
    " updated_at)"
    " VALUES (%(embedding_ref)s, %(model)s, %(namespace)s, %(policy_id)s, %(version)s,"
    " %(embedding)s::halfvec, %(title)s, %(source)s, %(tags)s, %(metadata)s, %(content)s,"
    " %(content_sha256)s, %(created_at)s, %(updated_at)s)"
    " ON CONFLICT (embedding_ref, model) DO UPDATE SET"
    " policy_id = EXCLUDED.policy_id, version = EXCLUDED.version,"
    " embedding = EXCLUDED.embedding, title = EXCLUDED.title, source = EXCLUDED.source,"
    " tags = EXCLUDED.tags, metadata = EXCLUDED.metadata, content = EXCLUDED.content,"
    " content_sha256 = EXCLUDED.content_sha256, updated_at = EXCLUDED.updated_at"
    " WHERE policy_embeddings.version < EXCLUDED.version"
)
_REVISE_METADATA = SQL(
    "UPDATE policy_embeddings SET version = %(version)s, title = %(title)s,"
    " source = %(source)s, tags = %(tags)s, metadata = %(metadata)s,"
    " updated_at = %(updated_at)s"
    " WHERE embedding_ref = %(embedding_ref)s AND model = %(model)s"
    " AND version < %(version)s"
)
_REMOVE = SQL("DELETE FROM policy_embeddings WHERE embedding_ref = %s AND model = %s")
# Every model's rows: a model whose projector is not running (the previous one after a
# swap) must not keep a deleted policy searchable when the configuration switches back.
_REMOVE_DELETED = SQL("DELETE FROM policy_embeddings WHERE embedding_ref = %s AND version < %s")
# The read model is derived data and its rows commit together with the position: a crash
# may lose the last few commits, rows and position alike, and the projection redoes them.
# Not waiting for the WAL flush saves an fsync per event (docs/adr/0024).
_ASYNC_COMMIT = SQL("SET LOCAL synchronous_commit = off")


def halfvec_text(values: Sequence[float]) -> str:
    """pgvector's text form, `[v1,v2,...]`. Seven significant digits are more than half
    precision keeps (about 3.3), so nothing is lost and the text stays short."""
    return "[" + ",".join([f"{v:.7g}" for v in values]) + "]"


TRACER = trace.get_tracer("memory.policy.projector")
_Step = TypeVar("_Step", bound=Callable[..., None])


def _projector_step(method: _Step) -> _Step:
    """A span per projector step (docs/adr/0111): which write, and the event's position
    (the `Tracking` argument, always last); never the policy's content."""

    @functools.wraps(method)
    def traced(self: Any, *args: Any) -> None:
        tracking = args[-1]
        attributes = {"memory.step": method.__name__, "memory.position": tracking.notification_id}
        with TRACER.start_as_current_span("policy projector step", attributes=attributes):
            method(self, *args)

    return cast(_Step, traced)


class PostgresPolicyEmbeddingsView(OutageAwareTrackingRecorder, PolicyEmbeddingsView):
    """The view of one model's projection; its tracking table is that model's
    (`ModelObjects.tracking_table`). `on_commit` hears every committed position."""

    def __init__(
        self,
        datastore: PostgresDatastore,
        *,
        tracking_table_name: str,
        on_commit: Callable[[int], None] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(datastore, tracking_table_name=tracking_table_name, **kwargs)
        self._on_commit = on_commit

    @_projector_step
    def upsert_row(self, row: PolicyRow, tracking: Tracking) -> None:
        with self.datastore.transaction(commit=True) as curs:
            curs.execute(_ASYNC_COMMIT, prepare=True)
            self._upsert_row(curs, row)
            self._insert_tracking(curs, tracking)
        self._committed(tracking)

    @_projector_step
    def revise_metadata(self, revision: MetadataRevision, tracking: Tracking) -> None:
        with self.datastore.transaction(commit=True) as curs:
            curs.execute(_ASYNC_COMMIT, prepare=True)
            self._revise_metadata(curs, revision)
            self._insert_tracking(curs, tracking)
        self._committed(tracking)

    @_projector_step
    def remove_row(self, embedding_ref: UUID, model: str, tracking: Tracking) -> None:
        with self.datastore.transaction(commit=True) as curs:
            curs.execute(_ASYNC_COMMIT, prepare=True)
            curs.execute(_REMOVE, (embedding_ref, model))
            self._insert_tracking(curs, tracking)
        self._committed(tracking)

    @_projector_step
    def remove_deleted(self, embedding_ref: UUID, version: int, tracking: Tracking) -> None:
        with self.datastore.transaction(commit=True) as curs:
            curs.execute(_ASYNC_COMMIT, prepare=True)
            curs.execute(_REMOVE_DELETED, (embedding_ref, version))
            self._insert_tracking(curs, tracking)
        self._committed(tracking)

    def insert_tracking(self, tracking: Tracking) -> None:
        with self.datastore.transaction(commit=True) as curs:
            curs.execute(_ASYNC_COMMIT, prepare=True)
            self._insert_tracking(curs, tracking)
        self._committed(tracking)

    def _upsert_row(self, curs: Cursor[Any], row: PolicyRow) -> None:
        curs.execute(
            _UPSERT,
            {
                "embedding_ref": row.embedding_ref,
                "model": row.model,
                "namespace": row.namespace.text,
                "policy_id": row.policy_id,
                "version": row.version,
                "embedding": halfvec_text(row.vector),
                "title": row.metadata.title,
                "source": row.metadata.source,
                "tags": list(row.metadata.tags),
                "metadata": Jsonb(row.metadata.to_json()),
                "content": row.content,
                "content_sha256": row.content_sha256,
                "created_at": row.created_at,
                "updated_at": row.updated_at,
            },
            prepare=True,
        )

    def _revise_metadata(self, curs: Cursor[Any], revision: MetadataRevision) -> None:
        curs.execute(
            _REVISE_METADATA,
            {
                "embedding_ref": revision.embedding_ref,
                "model": revision.model,
                "version": revision.version,
                "title": revision.metadata.title,
                "source": revision.metadata.source,
                "tags": list(revision.metadata.tags),
                "metadata": Jsonb(revision.metadata.to_json()),
                "updated_at": revision.updated_at,
            },
            prepare=True,
        )

    def _committed(self, tracking: Tracking) -> None:
        if self._on_commit is not None:
            self._on_commit(tracking.notification_id)
