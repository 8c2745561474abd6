"""Replicas starting together: the projector's leader creates its view and its runner's
application (the eventsourcing library's DDL, CREATE OR REPLACE FUNCTION among it) while
other processes open the policy log (the same DDL). Run unserialised, PostgreSQL refuses one
of them with "tuple concurrently updated" (a replica's start-up in CI did)."""

from __future__ import annotations

import concurrent.futures

from tests.integration.policy.conftest import MakeRuntime

from memory.infrastructure.policy.event_store import EventSourcedPolicyLog
from memory.infrastructure.policy.projector import PolicyProjector
from memory.infrastructure.postgres.database import Database

ROUNDS = 6
OPENERS = 3


def test_a_projector_starting_while_others_open_the_log_runs_its_ddl_in_turn(
    policy_db: Database, make_runtime: MakeRuntime
) -> None:
    runtime = make_runtime()

    def start() -> PolicyProjector:
        projector = PolicyProjector(policy_db, runtime.model, runtime.log)
        projector.start()
        return projector

    def open_log() -> None:
        EventSourcedPolicyLog.open(policy_db).close()

    with concurrent.futures.ThreadPoolExecutor(OPENERS + 1) as pool:
        for _ in range(ROUNDS):
            opening = [pool.submit(open_log) for _ in range(OPENERS)]
            projector = pool.submit(start).result()
            try:
                for future in opening:
                    future.result()
            finally:
                projector.stop()
