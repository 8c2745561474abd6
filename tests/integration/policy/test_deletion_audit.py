"""A policy deletion is in the audit trail, committed in one transaction with its `Deleted`
event: who deleted which policy at which version, never its content; a failure recording it
leaves the policy as it was, and a concurrent update is retried inside that transaction."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from tests.fakes import TEST_ACTOR

from memory.application.audit.ports import AuditEntry, AuditQuery
from memory.domain.errors import NotFound
from memory.domain.policy.policy_id import PolicyId
from memory.domain.policy.search import PolicySearch
from memory.entrypoints.policy_runtime import PolicyRuntime
from memory.infrastructure.audit.audit_log import PostgresAuditTrail
from memory.infrastructure.policy.projector import PolicyProjector
from memory.infrastructure.postgres.database import Database

MakeRuntime = Callable[..., PolicyRuntime]
StartProjector = Callable[..., PolicyProjector]
CONTENT = "Expense reports zqxcontent are due on the fifth of each month."


class Injected(Exception):
    pass


def deletions(database: Database) -> list[AuditEntry]:
    entries = PostgresAuditTrail(database).entries(AuditQuery()).entries
    return [e for e in entries if e.action == "policy.deleted"]


def test_every_write_is_recorded_with_who_and_which_version_never_the_content(
    make_runtime: MakeRuntime, start_projector: StartProjector, policy_db: Database
) -> None:
    runtime = make_runtime()
    start_projector(runtime)
    service = runtime.service
    service.store("p", CONTENT, {"title": "Expenses zqxtitle"}, actor=TEST_ACTOR)
    service.update("p", CONTENT + " Late ones need approval.", actor=TEST_ACTOR)
    service.update("p", CONTENT + " Late ones need approval.", {"title": "x"}, actor=TEST_ACTOR)
    # An org's policy of the same id: another policy, audited under its org.
    service.store("p", CONTENT, actor=TEST_ACTOR, namespace="org:acme")

    assert service.delete("p", actor=TEST_ACTOR) is True  # the projector saw the event

    entries = PostgresAuditTrail(policy_db).entries(AuditQuery()).entries
    assert [(e.action, e.org_id, e.before, e.after) for e in reversed(entries)] == [
        ("policy.stored", None, None, {"namespace": "global", "version": 1}),
        ("policy.updated", None, {"version": 1}, {"namespace": "global", "version": 2}),
        ("policy.updated", None, {"version": 2}, {"namespace": "global", "version": 3}),
        ("policy.stored", "acme", None, {"namespace": "org:acme", "version": 1}),
        (
            "policy.deleted",
            None,
            {"version": 3},
            {"deleted": True, "namespace": "global", "version": 4},
        ),
    ]
    assert {(e.actor, e.target) for e in entries} == {(TEST_ACTOR, "p")}
    assert [v.change.value for v in service.versions("p")] == [
        "stored",
        "content",
        "metadata",
        "deleted",
    ]
    assert {v.actor for v in service.versions("p")} == {TEST_ACTOR}
    with policy_db.connection() as conn:
        recorded = str(conn.execute("SELECT state FROM auditlog_events").fetchall())
    for marker in ("zqxcontent", "zqxtitle"):
        assert marker not in recorded and marker.encode().hex() not in recorded


def test_a_failure_recording_the_deletion_leaves_the_policy_as_it_was(
    make_runtime: MakeRuntime,
    start_projector: StartProjector,
    policy_db: Database,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runtime = make_runtime()
    start_projector(runtime)
    service = runtime.service
    service.store("p", CONTENT, actor=TEST_ACTOR)

    def fail(*args: object) -> None:
        raise Injected

    monkeypatch.setattr(PostgresAuditTrail, "_append", fail)
    with pytest.raises(Injected):
        service.delete("p", actor=TEST_ACTOR)
    monkeypatch.undo()

    assert service.get("p").version == 1
    assert [v.change.value for v in service.versions("p")] == ["stored"]
    assert deletions(policy_db) == []
    found = service.search(PolicySearch(CONTENT, similarity_threshold=0.0))
    assert [r.policy_id for r in found.results] == ["p"]
    assert service.delete("p", actor=TEST_ACTOR) is True  # and it still can be deleted
    assert len(deletions(policy_db)) == 1


def test_a_failure_recording_a_store_or_update_records_no_version(
    make_runtime: MakeRuntime,
    start_projector: StartProjector,
    policy_db: Database,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runtime = make_runtime()
    start_projector(runtime)
    service = runtime.service
    service.store("p", CONTENT, actor=TEST_ACTOR)

    def fail(*args: object) -> None:
        raise Injected

    monkeypatch.setattr(PostgresAuditTrail, "_append", fail)
    with pytest.raises(Injected):
        service.update("p", CONTENT + " Changed.", actor=TEST_ACTOR)
    with pytest.raises(Injected):
        service.update("p", CONTENT, {"title": "new"}, actor=TEST_ACTOR)
    with pytest.raises(Injected):
        service.store("q", CONTENT, actor=TEST_ACTOR, namespace="org:acme")
    monkeypatch.undo()

    assert [v.change.value for v in service.versions("p")] == ["stored"]
    assert service.get("p").content == CONTENT
    with pytest.raises(NotFound):
        service.versions("q", namespace="org:acme")
    entries = PostgresAuditTrail(policy_db).entries(AuditQuery()).entries
    assert [e.action for e in entries] == ["policy.stored"]
    # Nothing half-done stands in the way: the same writes succeed now.
    assert service.update("p", CONTENT + " Changed.", actor=TEST_ACTOR).version == 2
    assert service.store("q", CONTENT, actor=TEST_ACTOR, namespace="org:acme").version == 1


def test_an_update_racing_the_deletion_is_retried_inside_its_transaction(
    make_runtime: MakeRuntime,
    start_projector: StartProjector,
    policy_db: Database,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runtime = make_runtime()
    start_projector(runtime)
    service = runtime.service
    service.store("p", CONTENT, actor=TEST_ACTOR)
    read = runtime.log.get
    raced: list[Any] = []

    def read_then_race(policy_id: PolicyId) -> Any:
        aggregate = read(policy_id)
        if not raced:  # another writer saves a newer version before the deletion does
            raced.append(policy_id)
            racing = threading.Thread(
                target=lambda: service.update("p", "changed meanwhile", actor=TEST_ACTOR)
            )
            racing.start()
            racing.join(30)
        return aggregate

    monkeypatch.setattr(runtime.log, "get", read_then_race)
    assert service.delete("p", actor=TEST_ACTOR) is True

    assert [v.change.value for v in service.versions("p")] == [
        "stored",
        "content",
        "deleted",
    ]
    [entry] = deletions(policy_db)
    assert (entry.before, entry.after) == (
        {"version": 2},
        {"deleted": True, "namespace": "global", "version": 3},
    )
