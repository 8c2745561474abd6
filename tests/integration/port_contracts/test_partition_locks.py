"""`PartitionLockFactory`: one sweeper per (partition, model), against the in-memory locks
and the advisory locks (docs/adr/0125)."""

from __future__ import annotations

from memory.application.history.ports import PartitionLockFactory
from memory.domain.history.partition import Partition

P = Partition("acme", "slack", "C1")
Q = Partition("acme", "slack", "C2")
MODEL = "hash:1024"


def test_a_partition_and_model_is_held_by_one_session_at_a_time(
    partition_locks: PartitionLockFactory,
) -> None:
    with (
        partition_locks.session(wait=False) as first,
        partition_locks.session(wait=False) as second,
    ):
        with first.hold(P, MODEL) as held:
            assert held
            with first.hold(P, MODEL) as again:
                assert again  # a session takes its own lock again
            with second.hold(P, MODEL) as other:
                assert not other
            with second.hold(P, "other:model") as other_model:
                assert other_model
            with second.hold_all([P, Q], MODEL) as some:
                assert some == {Q}
        with second.hold(P, MODEL) as released:
            assert released


def test_a_waiting_session_gives_up_on_a_lock_that_stays_held(
    partition_locks: PartitionLockFactory,
) -> None:
    with (
        partition_locks.session(wait=False) as holder,
        partition_locks.session(wait=True) as waiter,
        holder.hold(P, MODEL) as held,
    ):
        assert held
        with waiter.hold(P, MODEL) as waited:
            assert not waited
        with waiter.hold_all([P, Q], MODEL) as some:
            assert some == {Q}
