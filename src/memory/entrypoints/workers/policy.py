"""The policy context's one background worker: the active model's projector, which keeps
the search read model up to date with the event log (LISTEN/NOTIFY woken)."""

from __future__ import annotations

import logging

import anyio

from memory.application.embedding import EmbeddingModel
from memory.entrypoints.runtime import Worker
from memory.infrastructure.policy.event_store import EventSourcedPolicyLog
from memory.infrastructure.policy.metrics import POLICY_PROJECTOR_LAG, POLICY_PROJECTOR_POSITION
from memory.infrastructure.policy.progress import ProjectionProgress
from memory.infrastructure.policy.projector import PolicyProjector, read_tracking_position
from memory.infrastructure.postgres.availability import is_connection_failure
from memory.infrastructure.postgres.database import Database

log = logging.getLogger(__name__)

# While another process holds the active model's projector lease, retry this often (that
# process keeps the read model current meanwhile; this one takes over if it stops). With
# several replicas this bounds the takeover after the leader dies: PostgreSQL releases the
# lease as soon as the leader's session ends, and a standby sees it at its next try, well
# within the 5 s the service promises (issue 12).
LEASE_RETRY_SECONDS = 1.0
# How often the running projector's health is checked and its lag published as a metric.
PROJECTOR_CHECK_SECONDS = 1.0


class ProjectorRole:
    """What this process does for the active model's projection (shown by /healthz)."""

    LEADER = "leader"  # holds the lease and projects
    STANDBY = "standby"  # another process holds it; this one takes over if it stops
    STOPPED = "stopped"  # not running (starting, restarting after a failure, shut down)


class PolicyWorkers:
    """The projector for the active model, run until cancelled, and what health reports of
    it."""

    def __init__(
        self,
        database: Database,
        model: EmbeddingModel,
        log: EventSourcedPolicyLog,
        progress: ProjectionProgress,
    ) -> None:
        self._database = database
        self._model = model
        self._log = log
        self._progress = progress
        self.projector: PolicyProjector | None = None
        self.role = ProjectorRole.STOPPED

    def workers(self) -> list[Worker]:
        return [self.run_projector]

    async def run_projector(self) -> None:
        """Project the active model's rows until cancelled, or stand by while another
        process does. Raises if processing fails, so the supervisor restarts it (it resumes
        from its recorded position). A leader whose lease connection dropped (PostgreSQL
        restarted, the connection was terminated) stands by again rather than failing:
        another replica may already have taken over."""
        while True:
            projector = PolicyProjector(
                self._database,
                self._model,
                self._log,
                progress=self._progress,
                shared_log=self._log,
            )
            try:
                await self._lead(projector)
            finally:
                self.projector = None
                self.role = ProjectorRole.STOPPED
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(projector.stop)

    @staticmethod
    def _try_start(projector: PolicyProjector) -> bool:
        """Whether this process leads now. The database being unreachable (restarting)
        means not yet: stand by and try again, instead of crashing with a stack trace."""
        try:
            return projector.try_start()
        except Exception as exc:
            if not is_connection_failure(exc):
                raise
            return False

    async def _lead(self, projector: PolicyProjector) -> None:
        """Stand by until this process holds the lease, then project until it loses it."""
        waiting_logged = False
        while not await anyio.to_thread.run_sync(self._try_start, projector):
            self.role = ProjectorRole.STANDBY
            if not waiting_logged:
                log.info(
                    "policy projector for %s runs in another process; standing by",
                    self._model.identity.id,
                )
                waiting_logged = True
            await anyio.sleep(LEASE_RETRY_SECONDS)
        self.projector = projector
        self.role = ProjectorRole.LEADER
        if waiting_logged:
            log.info("policy projector for %s taken over", self._model.identity.id)
        while await anyio.to_thread.run_sync(projector.lease_alive):
            await anyio.to_thread.run_sync(projector.check)
            await anyio.to_thread.run_sync(self._publish_lag)
            await anyio.sleep(PROJECTOR_CHECK_SECONDS)
        log.warning(
            "policy projector for %s lost its lease (its connection ended); standing by",
            self._model.identity.id,
        )

    def positions(self) -> tuple[int | None, int | None]:
        """(the active model's projection position, the log's head)."""
        head = self._log.head()
        position = read_tracking_position(self._database, self._model.identity.id)
        return position, head

    def _publish_lag(self) -> None:
        position, head = self.positions()
        model_id = self._model.identity.id
        POLICY_PROJECTOR_LAG.labels(model_id).set(lag(position, head))
        POLICY_PROJECTOR_POSITION.labels(model_id).set(position or 0)


def lag(position: int | None, head: int | None) -> int:
    return max(0, (head or 0) - (position or 0))
