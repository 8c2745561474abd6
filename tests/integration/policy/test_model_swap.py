"""Model swap: replaying the log into another model's rows (reembed), resuming it, rebuilding
a model's rows, dropping a model, and the model filter on every read."""

from __future__ import annotations

from typing import Any

import pytest
from tests.fakes import TEST_ACTOR
from tests.integration.policy.conftest import OTHER_MODEL, MakeRuntime, ReadRows, StartProjector

from memory.application.policy.commands import NewPolicy
from memory.application.policy.ports import ProjectionBusy
from memory.domain.errors import NotFound
from memory.domain.policy.content import content_sha256
from memory.domain.policy.search import PolicySearch
from memory.entrypoints.policy_runtime import PolicyRuntime
from memory.infrastructure.policy.indexes import has_hnsw_index
from memory.infrastructure.policy.model_admin import PolicyModelAdmin
from memory.infrastructure.policy.model_objects import ModelObjects
from memory.infrastructure.policy.projector import ProjectorFailed
from memory.infrastructure.policy.reembed import reembed
from memory.infrastructure.postgres.database import Database

CURRENT = {
    "p0": "policy zero, third wording",
    "p1": "policy one",
    "p2": "policy two, second wording",
    "p3": "policy three",
    "p4": "policy four",
    "p5": "policy five",
}


def seed(runtime: PolicyRuntime) -> None:
    runtime.service.store_many(
        [
            NewPolicy(f"p{i}", f"policy {w}", {"title": w})
            for i, w in enumerate(["zero", "one", "two", "three", "four", "five"])
        ],
        actor=TEST_ACTOR,
    )
    runtime.service.update("p0", "policy zero, second wording", actor=TEST_ACTOR)
    runtime.service.update("p0", "policy zero, third wording", actor=TEST_ACTOR)
    runtime.service.update("p2", "policy two, second wording", actor=TEST_ACTOR)
    runtime.service.update(
        "p3", "policy three", {"title": "three", "tags": ["renamed"]}, actor=TEST_ACTOR
    )


def test_reembed_embeds_each_current_version_once_into_rows_of_the_new_model(
    runtime: PolicyRuntime, read_rows: ReadRows, policy_db: Database, test_model: Any
) -> None:
    seed(runtime)
    other = test_model(OTHER_MODEL)
    seen: list[tuple[int | None, int | None]] = []
    report = reembed(
        policy_db, other, runtime.log, on_progress=lambda pos, head: seen.append((pos, head))
    )
    assert report.reached == report.head == runtime.log.head()
    assert sorted(other.documents) == sorted(CURRENT.values())
    assert report.texts_embedded == len(CURRENT)
    assert seen[-1] == (report.head, report.head)

    new_rows, old_rows = read_rows(OTHER_MODEL), read_rows("hash:384")
    assert set(new_rows) == set(old_rows) == set(CURRENT)
    for policy_id, text in CURRENT.items():
        new, old = new_rows[policy_id], old_rows[policy_id]
        assert new["content"] == text
        assert new["content_sha256"] == content_sha256(text)
        for column in ("embedding_ref", "version", "metadata", "created_at", "updated_at"):
            assert new[column] == old[column], column
        assert new["embedding"] != old["embedding"]  # another model's vector space
    assert new_rows["p3"]["tags"] == ["renamed"]
    with policy_db.connection() as conn:  # built once, after the replay
        assert has_hnsw_index(conn, OTHER_MODEL)


def test_every_read_filters_by_the_active_model(
    make_runtime: MakeRuntime, runtime: PolicyRuntime, policy_db: Database, test_model: Any
) -> None:
    seed(runtime)
    reembed(policy_db, test_model(OTHER_MODEL), runtime.log)
    with policy_db.connection() as conn:
        conn.execute("DELETE FROM policy_embeddings WHERE model = 'hash:384' AND policy_id = 'p4'")
    for mode in ("hnsw", "exact"):
        runtime.read_model.mode = mode  # type: ignore[attr-defined]
        answer = runtime.service.search(
            PolicySearch("policy four", similarity_threshold=0.0, limit=200)
        )
        assert "p4" not in {r.policy_id for r in answer.results}
        assert len(answer.results) == 5
    receipt_ref = runtime.service.versions("p4")[0].embedding_ref
    with pytest.raises(NotFound):
        runtime.service.get_by_embedding(str(receipt_ref))

    other_runtime = make_runtime(model=test_model(OTHER_MODEL))
    answer = other_runtime.service.search(
        PolicySearch("policy four", similarity_threshold=0.0, limit=200)
    )
    assert answer.model == OTHER_MODEL
    assert answer.results[0].policy_id == "p4"
    assert other_runtime.service.get_by_embedding(str(receipt_ref)).policy_id == "p4"


def test_an_interrupted_reembed_resumes_without_redoing_work(
    runtime: PolicyRuntime, read_rows: ReadRows, policy_db: Database, test_model: Any
) -> None:
    seed(runtime)
    flaky = test_model(OTHER_MODEL, fail_after=3)
    with pytest.raises(ProjectorFailed, match="connection refused"):
        reembed(policy_db, flaky, runtime.log)
    assert len(read_rows(OTHER_MODEL)) == 3

    healthy = test_model(OTHER_MODEL)
    report = reembed(policy_db, healthy, runtime.log)
    assert report.started_at is not None and report.started_at < report.head  # type: ignore[operator]
    assert len(healthy.documents) == len(CURRENT) - 3
    assert not set(flaky.documents) & set(healthy.documents)
    assert set(read_rows(OTHER_MODEL)) == set(CURRENT)


def test_a_rebuild_reproduces_identical_rows_and_references(
    make_runtime: MakeRuntime,
    start_projector: StartProjector,
    read_rows: ReadRows,
    policy_db: Database,
) -> None:
    runtime = make_runtime()
    projector = start_projector(runtime)
    seed(runtime)
    before = read_rows("hash:384")
    projector.stop()
    report = reembed(policy_db, runtime.model, runtime.log, rebuild=True)
    assert report.rows_removed == len(CURRENT)
    assert report.started_at is None
    assert report.texts_embedded == 0  # the events carry this model's vectors
    assert read_rows("hash:384") == before


def test_drop_model_removes_rows_index_and_position_of_that_model_only(
    runtime: PolicyRuntime, read_rows: ReadRows, policy_db: Database, test_model: Any
) -> None:
    seed(runtime)
    reembed(policy_db, test_model(OTHER_MODEL), runtime.log)
    admin = PolicyModelAdmin(policy_db)
    assert admin.stored_models() == {OTHER_MODEL: 6, "hash:384": 6}

    with pytest.raises(ProjectionBusy):
        admin.drop("hash:384")  # its projector runs
    assert admin.drop(OTHER_MODEL) == 6
    assert admin.stored_models() == {"hash:384": 6}
    objects = ModelObjects(OTHER_MODEL)
    with policy_db.connection() as conn:
        gone = conn.execute(
            "SELECT to_regclass(%s) AS tracking, to_regclass(%s) AS index",
            (objects.tracking_table, objects.hnsw_index),
        ).fetchone()
        kept = conn.execute(
            "SELECT to_regclass(%s) AS index", (ModelObjects("hash:384").hnsw_index,)
        ).fetchone()
    assert gone == {"tracking": None, "index": None}
    assert kept is not None and kept["index"] is not None
    assert len(read_rows("hash:384")) == 6

    # Dropped means gone: a new reembed starts from the beginning.
    again = test_model(OTHER_MODEL)
    reembed(policy_db, again, runtime.log)
    assert len(again.documents) == len(CURRENT)


def test_reembed_refuses_while_that_model_projects_elsewhere(
    runtime: PolicyRuntime, policy_db: Database
) -> None:
    with pytest.raises(ProjectionBusy, match="another process"):
        reembed(policy_db, runtime.model, runtime.log)


def test_reembed_keeps_each_policy_in_its_namespace(
    runtime: PolicyRuntime, policy_db: Database, test_model: Any
) -> None:
    """A replay writes every namespace's rows, an org's policy under its org even when the
    replay starts from its `ContentUpdated` (the earlier text is skipped)."""
    runtime.service.store("travel", "global travel rule", actor=TEST_ACTOR)
    acme = "org:acme"
    runtime.service.store("travel", "acme travel rule", actor=TEST_ACTOR, namespace=acme)
    runtime.service.update("travel", "acme travel rule, v2", actor=TEST_ACTOR, namespace=acme)
    runtime.service.store("own", "globex only", actor=TEST_ACTOR, namespace="org:globex")

    other = test_model(OTHER_MODEL)
    reembed(policy_db, other, runtime.log)

    assert sorted(other.documents) == ["acme travel rule, v2", "global travel rule", "globex only"]
    with policy_db.connection() as conn:
        rows = conn.execute(
            "SELECT model, namespace, policy_id, version, content FROM policy_embeddings"
            " ORDER BY model, namespace, policy_id"
        ).fetchall()
    expected = [
        ("global", "travel", 1, "global travel rule"),
        ("org:acme", "travel", 2, "acme travel rule, v2"),
        ("org:globex", "own", 1, "globex only"),
    ]
    for model in ("hash:384", OTHER_MODEL):
        assert [
            (r["namespace"], r["policy_id"], r["version"], r["content"])
            for r in rows
            if r["model"] == model
        ] == expected, model
