"""Running one model's projection: the library's projection runner (a LISTEN/NOTIFY woken
subscription to the event log, processing in its own thread), guarded by the model's lease.

The projection embeds (when it has to) before the view opens a transaction, so no
transaction is ever held open while a model computes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from eventsourcing.persistence import ApplicationRecorder
from eventsourcing.postgres import PostgresDatastore
from eventsourcing.projection import BaseProjectionRunner
from psycopg import errors, sql

from memory.application.embedding import EmbeddingModel
from memory.application.policy.ports import PolicyLogOutlook, ProjectionBusy, ProjectorFailed
from memory.application.policy.projection import PolicyEmbeddingsProjection
from memory.infrastructure.policy.event_store import (
    EventSourcedPolicyLog,
    PolicyApplication,
    policy_env,
)
from memory.infrastructure.policy.indexes import ensure_hnsw_index
from memory.infrastructure.policy.lease import ProjectionLease
from memory.infrastructure.policy.model_admin import label_tracking_table
from memory.infrastructure.policy.model_objects import ModelObjects
from memory.infrastructure.policy.progress import ProjectionProgress
from memory.infrastructure.policy.view import PostgresPolicyEmbeddingsView
from memory.infrastructure.postgres.availability import is_connection_failure
from memory.infrastructure.postgres.database import Database
from memory.infrastructure.postgres.event_store import EventStoreConnection

log = logging.getLogger(__name__)

# How often `catch_up` looks at the position (and at the runner's health).
CATCH_UP_POLL_SECONDS = 0.2


class PolicyProjector:
    def __init__(
        self,
        database: Database,
        model: EmbeddingModel,
        outlook: PolicyLogOutlook,
        *,
        progress: ProjectionProgress | None = None,
        view_class: type[PostgresPolicyEmbeddingsView] = PostgresPolicyEmbeddingsView,
        index_first: bool = True,
        shared_log: EventSourcedPolicyLog | None = None,
    ) -> None:
        """`index_first=False` leaves creating the model's HNSW index to the caller: a bulk
        replay inserts rows several times faster without it and builds it once at the end
        (`reembed` does); a projector serving searches creates it before its first row.
        `shared_log`: the process's event log, whose library pool the subscription and the
        view then use too, instead of two pools of the projector's own."""
        self._database = database
        self.model = model
        self._outlook = outlook
        self._progress = progress
        self._view_class = view_class
        self._index_first = index_first
        self._objects = ModelObjects(model.identity.id)
        self._lease = ProjectionLease(
            database.direct_url, model.identity.id, connect_seconds=database.timeout
        )
        self._shared_log = shared_log
        self._view: PostgresPolicyEmbeddingsView | None = None
        self._projection: PolicyEmbeddingsProjection | None = None
        self._runner: BaseProjectionRunner[PolicyApplication] | None = None
        # The position this projector started from (None: from the beginning of the log).
        self.started_at: int | None = None

    @property
    def model_id(self) -> str:
        return self.model.identity.id

    @property
    def embedded_texts(self) -> int:
        return 0 if self._projection is None else self._projection.embedded_texts

    def start(self) -> None:
        if not self.try_start():
            self._lease.release()  # a standby's connection: nobody will try again
            raise ProjectionBusy(
                f"the projector for model {self.model_id} is running in another process "
                "(a `memory serve` with this model, or another `reembed`)"
            )

    def try_start(self) -> bool:
        """Take the lease and start processing; False if another process holds it."""
        if self._runner is not None:
            return True
        if not self._lease.try_acquire():
            return False
        try:
            if self._index_first:
                with self._database.connection() as conn:
                    ensure_hnsw_index(conn, self.model_id)
            on_commit = None if self._progress is None else self._progress.advance
            view = self._view_class(
                self._view_datastore(),
                tracking_table_name=self._objects.tracking_table,
                on_commit=on_commit,
            )
            self._view = view
            # The view's tables and the runner's application run the library's DDL (CREATE
            # OR REPLACE FUNCTION among it): under the migration lock, like every other
            # process's, or replicas starting together fail with "tuple concurrently updated".
            with self._database.migration_lock():
                view.create_table()
                with self._database.connection() as conn:
                    label_tracking_table(conn, self.model_id)
                # Read before the runner's thread starts, which may process events at once.
                self.started_at = view.max_tracking_id(PolicyApplication.name)
                self._projection = PolicyEmbeddingsProjection(view, self.model, self._outlook)
                runner: BaseProjectionRunner[PolicyApplication] = BaseProjectionRunner(
                    projection=self._projection,
                    application_class=self._application_class(),
                    tracking_recorder=view,
                    topics=(),
                    # The runner's subscription LISTENs: a session, so the direct URL.
                    env=policy_env(EventStoreConnection.for_database(self._database, direct=True)),
                )
            runner.__enter__()
            self._runner = runner
        except BaseException:
            self.stop()
            raise
        log.info("policy projector for %s started at position %s", self.model_id, self.position())
        return True

    def _view_datastore(self) -> PostgresDatastore:
        if self._shared_log is not None:
            return self._shared_log.datastore
        return EventStoreConnection.for_database(self._database).datastore()

    def _application_class(self) -> type[PolicyApplication]:
        """The application the runner constructs to subscribe to the log: with a shared log,
        one that records through the shared log's recorder (its own library pool is then
        never opened). Not when the log's pool may be a transaction pooler (a separate direct
        URL): the subscription LISTENs, which needs a session of its own (docs/adr/0061)."""
        if self._shared_log is None or not self._database.prepared_statements:
            return PolicyApplication
        shared_recorder: ApplicationRecorder = self._shared_log.app.recorder

        class SharedPolicyApplication(PolicyApplication):
            # The same name: the same tables, settings prefix and tracking key.
            name = PolicyApplication.name

            def construct_recorder(self) -> ApplicationRecorder:
                return shared_recorder

        return SharedPolicyApplication

    def position(self) -> int | None:
        if self._view is None:
            return None
        position: int | None = self._view.max_tracking_id(PolicyApplication.name)
        return position

    def lease_alive(self) -> bool:
        """Whether this projector still holds its lease (its connection is up)."""
        return self._lease.alive()

    def check(self) -> None:
        """Raise `ProjectorFailed` if processing stopped or the lease was lost."""
        runner = self._runner
        if runner is None:
            raise ProjectorFailed(f"projector for {self.model_id} is not running")
        if runner.is_interrupted.is_set():
            try:
                runner.run_forever(timeout=0)
            except Exception as exc:
                raise ProjectorFailed(f"projector for {self.model_id} failed: {exc}") from exc
            raise ProjectorFailed(f"projector for {self.model_id} stopped")
        if not self._lease.alive():
            raise ProjectorFailed(
                f"projector for {self.model_id} lost its lease"
            ) from self._lease.lost_because

    def catch_up(
        self,
        target: int | None,
        on_progress: Callable[[int | None], None] | None = None,
        *,
        poll_seconds: float = CATCH_UP_POLL_SECONDS,
    ) -> None:
        """Block until the position reaches `target` (a notification id), reporting the
        position as it moves. Raises `ProjectorFailed` if processing stops."""
        while True:
            position = self.position()
            if on_progress is not None:
                on_progress(position)
            if target is None or (position is not None and position >= target):
                return
            self.check()
            time.sleep(poll_seconds)

    def stop(self) -> None:
        """Stop processing (the current event finishes or rolls back), release the lease."""
        runner, self._runner = self._runner, None
        try:
            if runner is not None:
                try:
                    runner.__exit__(None, None, None)
                except Exception as exc:
                    if not is_connection_failure(exc):
                        log.exception(
                            "policy projector for %s stopped with an error", self.model_id
                        )
                    else:  # an outage, reported by the worker's supervisor: no stack trace
                        log.warning(
                            "policy projector for %s lost its database connection", self.model_id
                        )
        finally:
            if self._view is not None:
                if self._shared_log is None:
                    self._view.datastore.close()
                self._view = None
            self._lease.release()


def read_tracking_position(database: Database, model_id: str) -> int | None:
    """A model's projection position as recorded, from any process (None if its projector
    never ran). Read over the service's pool: the tracking table is the library's, but
    reading it needs no library pool of its own."""
    statement = sql.SQL(
        "SELECT max(notification_id) AS position FROM {} WHERE application_name = %s"
    ).format(sql.Identifier(ModelObjects(model_id).tracking_table))
    try:
        with database.connection() as conn:
            row = conn.execute(statement, (PolicyApplication.name,)).fetchone()
    except errors.UndefinedTable:
        return None
    position = None if row is None else row["position"]
    return None if position is None else int(str(position))
