"""How many connection pools one process opens with both contexts built and the policy
projector running: the service's own, and the library pool of policy's log (shared by the
commands, the projector's subscription and its view); the history sweep's watermarks are on
the service's pool since docs/adr/0148. See docs/architecture.md, "Connections"."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

import psycopg_pool
from psycopg.conninfo import conninfo_to_dict
from tests.fakes import TEST_ACTOR

from memory.entrypoints.bootstrap import build_services
from memory.entrypoints.policy_runtime import PolicyRuntime
from memory.infrastructure.policy.projector import PolicyProjector
from memory.infrastructure.settings import Settings

EXPECTED_POOLS = {"service": 1, "library": 1}


def open_pools(database_url: str) -> dict[str, int]:
    dbname = conninfo_to_dict(database_url)["dbname"]
    gc.collect()
    found = {"service": 0, "library": 0}
    for pool in gc.get_objects():
        if not isinstance(pool, psycopg_pool.ConnectionPool) or pool.closed:
            continue
        if pool.kwargs.get("dbname") == dbname:
            found["library"] += 1
        elif conninfo_to_dict(pool.conninfo).get("dbname") == dbname:
            found["service"] += 1
    return found


def test_a_process_opens_a_pool_per_event_store_and_one_of_its_own(
    database_url: str, make_settings: Callable[..., Settings]
) -> None:
    services = build_services(make_settings(), database_url)
    try:
        policy = services.context("policy")
        assert isinstance(policy, PolicyRuntime)
        projector = PolicyProjector(
            services.database, policy.model, policy.log, shared_log=policy.log
        )
        projector.start()
        try:
            services.policy.store("p1", "Travel must be approved.", actor=TEST_ACTOR)
            services.history.sweep()
            for ctx in services.contexts:
                ctx.health()
            deadline = time.monotonic() + 5
            while services.policy.models()[0].position is None:
                assert time.monotonic() < deadline, "the projector processed nothing"
                time.sleep(0.05)
            assert open_pools(database_url) == EXPECTED_POOLS
        finally:
            projector.stop()
    finally:
        services.close()
    assert open_pools(database_url) == {"service": 0, "library": 0}
