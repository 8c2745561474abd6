"""Several processes starting at once on a fresh database (a `memory db start` cluster shared
by servers, a deployment's replicas): migrations and the event stores' tables are created
once, under one lock, and every start-up succeeds. (Before the migration session was
autocommit, a second starter re-applied a migration about once in six runs of this test.)"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable

from tests.fakes import TEST_ACTOR

from memory.entrypoints.bootstrap import Services, build_services
from memory.infrastructure.settings import Settings

STARTS = 2


def test_concurrent_start_ups_on_a_fresh_database_all_succeed(
    database_url: str, make_settings: Callable[..., Settings]
) -> None:
    settings = make_settings(projection_wait_timeout=0)
    together = threading.Barrier(STARTS)

    def start() -> Services:
        together.wait(10)
        return build_services(settings, database_url, contexts=("policy",))

    with concurrent.futures.ThreadPoolExecutor(STARTS) as pool:
        futures = [pool.submit(start) for _ in range(STARTS)]
        started = [f.result(timeout=60) for f in futures]
    try:
        receipt = started[0].policy.store("p1", "Travel must be approved.", actor=TEST_ACTOR)
        assert [v.version for v in started[-1].policy.versions("p1")] == [receipt.version]
    finally:
        for services in started:
            services.close()
