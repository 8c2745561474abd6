"""The projector writes rows and its position in one transaction: a crash at any point
neither skips nor repeats an event."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Any, ClassVar

import pytest
from psycopg import Cursor
from tests.fakes import TEST_ACTOR
from tests.integration.policy.conftest import MakeRuntime, StartProjector

from memory.application.policy.commands import NewPolicy
from memory.application.policy.projection import PolicyRow
from memory.domain.policy.aggregate import PolicyEmbedding
from memory.entrypoints.policy_runtime import PolicyRuntime
from memory.infrastructure.policy.event_store import PolicyApplication
from memory.infrastructure.policy.projector import (
    PolicyProjector,
    ProjectorFailed,
    read_tracking_position,
)
from memory.infrastructure.policy.view import PostgresPolicyEmbeddingsView
from memory.infrastructure.postgres.database import Database


class CrashingView(PostgresPolicyEmbeddingsView):
    """Dies after writing one policy's row and before its transaction commits, once; and
    remembers every position that did commit."""

    crash_on: ClassVar[str | None] = None
    committed: ClassVar[list[int]] = []

    def _upsert_row(self, curs: Cursor[Any], row: PolicyRow) -> None:
        super()._upsert_row(curs, row)
        if row.policy_id == CrashingView.crash_on:
            CrashingView.crash_on = None
            raise RuntimeError("simulated crash between the row write and the commit")

    def _committed(self, tracking: Any) -> None:
        CrashingView.committed.append(tracking.notification_id)
        super()._committed(tracking)


def expected_versions(runtime: PolicyRuntime, upto: int | None) -> dict[str, int]:
    """Each policy's version after applying the log's events up to notification `upto`."""
    versions: dict[str, int] = {}
    names: dict[Any, str] = {}
    if upto is None:
        return versions
    app = runtime.log.app
    for notification in app.recorder.select_notifications(start=1, limit=upto, stop=upto):
        event = app.mapper.to_domain_event(notification)
        if isinstance(event, PolicyEmbedding.Stored):
            names[event.originator_id] = event.policy_id
        versions[names[event.originator_id]] = event.originator_version
    return versions


def row_versions(database: Database, model: str) -> dict[str, int]:
    with database.connection() as conn:
        rows = conn.execute(
            "SELECT policy_id, version FROM policy_embeddings WHERE model = %s", (model,)
        ).fetchall()
    return {str(r["policy_id"]): int(r["version"]) for r in rows}  # type: ignore[call-overload]


def seed(runtime: PolicyRuntime, policies: int) -> None:
    runtime.service.store_many(
        [NewPolicy(f"p{i}", f"policy text {i}", {"title": f"t{i}"}) for i in range(policies)],
        actor=TEST_ACTOR,
    )
    for i in range(0, policies, 3):
        runtime.service.update(f"p{i}", f"policy text {i}, revised", actor=TEST_ACTOR)
    for i in range(0, policies, 5):
        runtime.service.update(
            f"p{i}", f"policy text {i}, revised", {"title": "meta"}, actor=TEST_ACTOR
        )


def test_a_crash_before_commit_loses_the_row_and_the_position_together(
    make_runtime: MakeRuntime, start_projector: StartProjector, policy_db: Database
) -> None:
    runtime = make_runtime(projection_wait_timeout=0)
    seed(runtime, 12)
    head = runtime.log.head()
    assert head is not None
    CrashingView.crash_on, CrashingView.committed = "p7", []

    crashing = start_projector(runtime, view_class=CrashingView)
    with pytest.raises(ProjectorFailed, match="simulated crash"):
        crashing.catch_up(head, poll_seconds=0.01)
    position = crashing.position()
    crashing.stop()
    assert position is not None
    assert row_versions(policy_db, "hash:384") == expected_versions(runtime, position)
    assert "p7" not in row_versions(policy_db, "hash:384")

    restarted = start_projector(runtime, view_class=CrashingView)
    restarted.catch_up(head, poll_seconds=0.01)
    assert restarted.position() == head
    assert row_versions(policy_db, "hash:384") == expected_versions(runtime, head)
    # Every event was committed exactly once over both runs: none skipped, none repeated.
    assert sorted(CrashingView.committed) == list(range(1, head + 1))


KILLABLE_PROJECTOR = """
import sys, time
from memory.infrastructure.postgres.database import Database
from memory.infrastructure.embedding.hashing import HashEmbeddingModel
from memory.infrastructure.policy.event_store import EventSourcedPolicyLog
from memory.infrastructure.policy.projector import PolicyProjector

url = sys.argv[1]
database = Database(url, min_size=1, max_size=2)
database.open()
log = EventSourcedPolicyLog.connect(url)
projector = PolicyProjector(database, HashEmbeddingModel(384), log)  # keep it referenced
projector.start()
print("started", flush=True)
time.sleep(600)
"""


def test_a_killed_projector_process_resumes_exactly_where_its_commits_stopped(
    make_runtime: MakeRuntime,
    start_projector: StartProjector,
    policy_db: Database,
) -> None:
    runtime = make_runtime(projection_wait_timeout=0)
    for batch in range(10):
        runtime.service.store_many(
            [NewPolicy(f"p{batch}-{i}", f"text {batch} {i}") for i in range(150)], actor=TEST_ACTOR
        )
    seed(runtime, 30)
    head = runtime.log.head()
    assert head is not None
    child = subprocess.Popen(
        [sys.executable, "-c", KILLABLE_PROJECTOR, policy_db.url],
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == b"started"
        deadline = time.monotonic() + 60
        while (read_tracking_position(policy_db, "hash:384") or 0) < head // 4:
            assert time.monotonic() < deadline, "the child projector made no progress"
            time.sleep(0.005)
        child.send_signal(signal.SIGKILL)
        child.wait(10)
        position = read_tracking_position(policy_db, "hash:384")
        assert position is not None
        # What the killed process committed is exactly the log up to its position.
        assert row_versions(policy_db, "hash:384") == expected_versions(runtime, position)

        deadline = time.monotonic() + 30
        while True:  # the server notices the dead session and frees its lease
            projector = PolicyProjector(policy_db, runtime.model, runtime.log)
            if projector.try_start():
                break
            assert time.monotonic() < deadline
            time.sleep(0.1)
        try:
            projector.catch_up(head, poll_seconds=0.01)
            assert projector.position() == head
        finally:
            projector.stop()
        assert row_versions(policy_db, "hash:384") == expected_versions(runtime, head)
        assert position < head, "killed after finishing: the test proved nothing"
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
        if child.stdout is not None:
            child.stdout.close()


def test_one_projector_per_model_across_processes(
    make_runtime: MakeRuntime, start_projector: StartProjector, policy_db: Database
) -> None:
    runtime = make_runtime()
    first = start_projector(runtime)
    second = PolicyProjector(policy_db, runtime.model, runtime.log)
    assert not second.try_start()
    first.stop()
    assert second.try_start()
    second.stop()
    assert PolicyApplication.name == "policy"
