"""`PolicyProjector`: the lease the policy worker leads by, against the in-memory projector
and the PostgreSQL one (docs/adr/0125)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memory.application.policy.ports import PolicyProjector, ProjectorFailed


def test_one_projector_holds_the_lease_until_it_stops(
    new_projector: Callable[[], PolicyProjector],
) -> None:
    first, second = new_projector(), new_projector()
    with pytest.raises(ProjectorFailed):
        first.check()  # not started
    assert first.try_start()
    assert first.try_start()  # already running: still leading
    assert not second.try_start()
    assert first.lease_alive() and not second.lease_alive()
    first.check()
    first.stop()
    first.stop()  # stopping twice is harmless
    assert not first.lease_alive()
    assert second.try_start()
    second.check()
    second.stop()
