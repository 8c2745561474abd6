"""Read-your-writes: how a writer learns that the projection has processed its event.

A projector in this process announces every commit (`ProjectionProgress.advance`), so a
waiting writer wakes at once; a projector in another process is seen by reading its
tracking table every `TRACKING_POLL_SECONDS`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from memory.application.errors import DatabaseUnavailable

# How often a waiting writer reads the tracking table when no in-process commit woke it.
TRACKING_POLL_SECONDS = 0.25


class ProjectionProgress:
    """The highest position this process's projector has committed, with a condition to
    wait on."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._position: int | None = None

    @property
    def position(self) -> int | None:
        return self._position

    def advance(self, notification_id: int) -> None:
        with self._changed:
            if self._position is None or notification_id > self._position:
                self._position = notification_id
            self._changed.notify_all()

    def wait_for_change(self, timeout: float) -> None:
        with self._changed:
            self._changed.wait(timeout)


class TrackingWaiter:
    """`ProjectionWaiter` for the active model: in-process progress first, the tracking
    table (`read_position`) as the fallback."""

    def __init__(
        self,
        progress: ProjectionProgress,
        read_position: Callable[[], int | None],
        *,
        poll_seconds: float = TRACKING_POLL_SECONDS,
    ) -> None:
        self._progress = progress
        self._read_position = read_position
        self._poll_seconds = poll_seconds

    def wait(self, notification_id: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while True:
            if self._reached(self._progress.position, notification_id):
                return True
            try:
                stored = self._read_position()
            except DatabaseUnavailable:
                # The event is recorded; only confirming it is projected failed. The writer
                # answers `searchable: false` at the deadline rather than failing a write
                # that happened (a retry would then conflict with it).
                stored = None
            if self._reached(stored, notification_id):
                assert stored is not None
                self._progress.advance(stored)
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            end = time.monotonic() + min(remaining, self._poll_seconds)
            while not self._reached(self._progress.position, notification_id):
                left = end - time.monotonic()
                if left <= 0:
                    break
                self._progress.wait_for_change(left)

    @staticmethod
    def _reached(position: int | None, notification_id: int) -> bool:
        return position is not None and position >= notification_id
