from __future__ import annotations

from memory.domain.history.partition import Partition
from memory.infrastructure.history.partition_locks import lock_key


def test_lock_keys_are_per_partition_and_model() -> None:
    p = Partition("acme", "slack", "C1")
    assert lock_key(p, "m") == lock_key(Partition("acme", "slack", "C1"), "m")
    assert lock_key(p, "m") != lock_key(p, "n")
    assert -(2**31) <= lock_key(p, "m") < 2**31
