"""Which process projects the active model, and how far it got.

One process at a time holds the active model's lease and projects; the others stand by and
take over when it stops (issue 12). The policy worker (`memory.entrypoints.workers.policy`)
drives this through `PolicyService` as the history workers drive the sweep: it decides when
to try, wait and check; this knows the projector, its role and its lag.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from memory.application.policy.ports import (
    PolicyModelStore,
    PolicyProjector,
    ProjectorFactory,
    ProjectorFailed,
)


class ProjectorRole:
    """What this process does for the active model's projection (shown by /healthz)."""

    LEADER = "leader"  # holds the lease and projects
    STANDBY = "standby"  # another process holds it; this one takes over if it stops
    STOPPED = "stopped"  # not running (starting, restarting after a failure, shut down)


@dataclass(frozen=True, slots=True)
class ProjectorStatus:
    """The active model's projection as this process sees it: its role, whether it
    projects here, the position reached and the log's head (any process's projector)."""

    model: str
    role: str
    running_here: bool
    position: int | None
    head: int | None

    @property
    def lag_events(self) -> int:
        return lag(self.position, self.head)


def lag(position: int | None, head: int | None) -> int:
    """Events recorded but not yet projected."""
    return max(0, (head or 0) - (position or 0))


class ProjectorLeadership:
    """The active model's projector in this process, one run at a time: a run that stopped
    (lease lost, failed, shut down) is replaced by a fresh one at the next `try_lead`."""

    def __init__(
        self, projectors: ProjectorFactory, models: PolicyModelStore, *, model_id: str
    ) -> None:
        self._projectors = projectors
        self._models = models
        self._model_id = model_id
        self._lock = threading.Lock()
        self._projector: PolicyProjector | None = None
        self._leading = False
        self.role = ProjectorRole.STOPPED

    def try_lead(self) -> bool:
        """Take the lease and start projecting; False while another process leads (this one
        stands by)."""
        with self._lock:
            if self._projector is None:
                self._projector = self._projectors()
            projector = self._projector
        # Standing by while it tries: a failure to reach the database is not leading.
        self.role = ProjectorRole.STANDBY
        if not projector.try_start():
            return False
        self._leading = True
        self.role = ProjectorRole.LEADER
        return True

    def lease_alive(self) -> bool:
        projector = self._projector
        return self._leading and projector is not None and projector.lease_alive()

    def check(self) -> ProjectorStatus:
        """`ProjectorFailed` if processing stopped or the lease was lost; else the status."""
        projector = self._projector
        if projector is None or not self._leading:
            raise ProjectorFailed(f"projector for {self._model_id} is not running")
        projector.check()
        return self.status()

    def stop(self) -> None:
        """Stop this process's run (if any) and release the lease."""
        with self._lock:
            projector, self._projector = self._projector, None
            self._leading = False
            self.role = ProjectorRole.STOPPED
        if projector is not None:
            projector.stop()

    def status(self) -> ProjectorStatus:
        return ProjectorStatus(
            model=self._model_id,
            role=self.role,
            running_here=self._leading,
            position=self._models.position(self._model_id),
            head=self._models.head(),
        )
