"""The policy context's one background worker: the active model's projector, which keeps
the search read model up to date with the event log (LISTEN/NOTIFY woken). It runs through
`PolicyService` (docs/adr/0054), each step in a worker thread: lead or stand by, check the
running projection (the metrics publish its lag from that call), stop it on the way out."""

from __future__ import annotations

import logging

import anyio

from memory.application.policy.service import PolicyService
from memory.entrypoints.runtime import Worker
from memory.infrastructure.postgres.availability import is_connection_failure

log = logging.getLogger(__name__)

# While another process holds the active model's projector lease, retry this often (that
# process keeps the read model current meanwhile; this one takes over if it stops). With
# several replicas this bounds the takeover after the leader dies: PostgreSQL releases the
# lease as soon as the leader's session ends, and a standby sees it at its next try, well
# within the 5 s the service promises (issue 12).
LEASE_RETRY_SECONDS = 1.0
# How often the running projector's health is checked and its lag published as a metric.
PROJECTOR_CHECK_SECONDS = 1.0


class PolicyWorkers:
    """The projector for the active model, run until cancelled."""

    def __init__(self, service: PolicyService) -> None:
        self._service = service

    def workers(self) -> list[Worker]:
        return [self.run_projector]

    async def run_projector(self) -> None:
        """Project the active model's rows until cancelled, or stand by while another
        process does. Raises if processing fails, so the supervisor restarts it (it resumes
        from its recorded position). A leader whose lease connection dropped (PostgreSQL
        restarted, the connection was terminated) stands by again rather than failing:
        another replica may already have taken over."""
        while True:
            try:
                await self._lead()
            finally:
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(self._service.stop_projection)

    def _try_lead(self) -> bool:
        """Whether this process leads now. The database being unreachable (restarting)
        means not yet: stand by and try again, instead of crashing with a stack trace."""
        try:
            return self._service.lead_projection()
        except Exception as exc:
            if not is_connection_failure(exc):
                raise
            return False

    async def _lead(self) -> None:
        """Stand by until this process holds the lease, then project until it loses it."""
        model = self._service.active_model
        waiting_logged = False
        while not await anyio.to_thread.run_sync(self._try_lead):
            if not waiting_logged:
                log.info("policy projector for %s runs in another process; standing by", model)
                waiting_logged = True
            await anyio.sleep(LEASE_RETRY_SECONDS)
        if waiting_logged:
            log.info("policy projector for %s taken over", model)
        while await anyio.to_thread.run_sync(self._service.projection_alive):
            await anyio.to_thread.run_sync(self._service.check_projection)
            await anyio.sleep(PROJECTOR_CHECK_SECONDS)
        log.warning(
            "policy projector for %s lost its lease (its connection ended); standing by", model
        )
