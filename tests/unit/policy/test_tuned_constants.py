"""Tuned numbers of the policy context that are not covered by a behaviour test elsewhere,
with the reason each has its value."""

from __future__ import annotations

from memory.entrypoints.policy_runtime import LEASE_RETRY_SECONDS, PROJECTOR_CHECK_SECONDS
from memory.infrastructure.policy.indexes import (
    HNSW_EF_CONSTRUCTION,
    HNSW_M,
    INDEX_BUILD_MEMORY,
)
from memory.infrastructure.policy.projector import CATCH_UP_POLL_SECONDS
from memory.infrastructure.policy.read_model import MIN_STATEMENT_TIMEOUT_MS


def test_hnsw_build_parameters_are_pgvector_defaults() -> None:
    assert (HNSW_M, HNSW_EF_CONSTRUCTION) == (16, 64)


def test_index_builds_get_room_for_a_100k_row_graph() -> None:
    # ~200 MB for 100k rows of halfvec(384) with m = 16; a graph that spills is built slowly.
    assert INDEX_BUILD_MEMORY == "512MB"


def test_statement_timeout_never_becomes_zero() -> None:
    # statement_timeout = 0 disables the timeout: the smallest budget must still be one.
    assert MIN_STATEMENT_TIMEOUT_MS == 1


def test_worker_intervals() -> None:
    # A standby projector takes over within 5 s of the active one stopping; health and lag
    # are checked every second; reembed redraws its progress bar five times a second.
    assert LEASE_RETRY_SECONDS == 5.0
    assert PROJECTOR_CHECK_SECONDS == 1.0
    assert CATCH_UP_POLL_SECONDS == 0.2
