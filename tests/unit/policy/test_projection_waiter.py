from __future__ import annotations

import threading
import time

from memory.application.errors import DatabaseUnavailable
from memory.infrastructure.policy.progress import (
    ProjectionProgress,
    TrackingWaiter,
)


def test_an_in_process_commit_wakes_the_writer_at_once() -> None:
    progress = ProjectionProgress()
    reads: list[int] = []

    def read_position() -> int | None:
        reads.append(1)
        return None

    waiter = TrackingWaiter(progress, read_position, poll_seconds=10.0)
    threading.Timer(0.05, progress.advance, args=(7,)).start()
    started = time.monotonic()
    assert waiter.wait(7, timeout=5.0)
    assert time.monotonic() - started < 1.0  # not the 10 s poll interval
    assert len(reads) == 1


def test_a_projector_in_another_process_is_seen_through_the_tracking_table() -> None:
    stored = {"position": 3}
    waiter = TrackingWaiter(ProjectionProgress(), lambda: stored["position"], poll_seconds=0.01)
    threading.Timer(0.05, stored.update, kwargs={"position": 9}).start()
    assert waiter.wait(9, timeout=5.0)


def test_the_wait_is_bounded() -> None:
    waiter = TrackingWaiter(ProjectionProgress(), lambda: 1, poll_seconds=0.01)
    started = time.monotonic()
    assert not waiter.wait(2, timeout=0.1)
    assert 0.1 <= time.monotonic() - started < 1.0


def test_progress_never_moves_backwards() -> None:
    progress = ProjectionProgress()
    progress.advance(5)
    progress.advance(3)
    assert progress.position == 5


def test_a_database_outage_while_waiting_is_not_searchable_yet_rather_than_a_failure() -> None:
    def read_position() -> int | None:
        raise DatabaseUnavailable("down")

    waiter = TrackingWaiter(ProjectionProgress(), read_position, poll_seconds=0.01)
    assert not waiter.wait(2, timeout=0.1)  # the write happened: `searchable: false`, no 503
