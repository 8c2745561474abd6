"""The PolicyEmbedding event store on PostgreSQL (the library's persistence, with the
pipeline-free recorder)."""

from __future__ import annotations

import threading

import pytest
from tests.fakes import TEST_ACTOR
from tests.integration.policy.conftest import MakeRuntime

from memory.application.policy.commands import NewPolicy
from memory.application.policy.ports import RecordConflict
from memory.domain.embedding import EmbeddingVector, ModelIdentity
from memory.domain.policy.aggregate import PolicyEmbedding
from memory.domain.policy.content import PolicyContent
from memory.domain.policy.metadata import PolicyMetadata
from memory.domain.policy.namespace import GLOBAL, PolicyAddress
from memory.domain.policy.policy_id import PolicyId
from memory.infrastructure.policy.event_recorder import PolicyEventRecorder
from memory.infrastructure.policy.event_store import EventSourcedPolicyLog


def new_aggregate(policy_id: str) -> PolicyEmbedding:
    return PolicyEmbedding.store(
        PolicyAddress(GLOBAL, PolicyId.parse(policy_id)),
        PolicyContent.parse("text", max_chars=10),
        PolicyMetadata(),
        ModelIdentity("hash:384", 384),
        EmbeddingVector(tuple([1.0] + [0.0] * 383)),
        actor=TEST_ACTOR,
    )


def test_the_log_uses_the_pipeline_free_recorder(make_runtime: MakeRuntime) -> None:
    assert isinstance(make_runtime().log.app.recorder, PolicyEventRecorder)


def test_large_batches_and_large_policies_are_recorded_without_hanging(
    make_runtime: MakeRuntime,
) -> None:
    """psycopg's pipeline mode deadlocks above ~0.5 MB per insert; this recorder must not."""
    runtime = make_runtime(projection_wait_timeout=0, policy_max_content_chars=600_000)
    done = threading.Event()

    def store() -> None:
        runtime.service.store_many(
            [NewPolicy(f"p{i}", f"policy {i} " + "x" * 2_000) for i in range(200)], actor=TEST_ACTOR
        )
        runtime.service.store("big", "y" * 600_000, actor=TEST_ACTOR)
        done.set()

    worker = threading.Thread(target=store, daemon=True)
    worker.start()
    assert done.wait(60), "recording a large batch hung"
    assert runtime.log.head() == 201


def test_concurrent_first_stores_of_one_policy_conflict(database_url: str) -> None:
    first, second = (
        EventSourcedPolicyLog.connect(database_url),
        EventSourcedPolicyLog.connect(database_url),
    )
    try:
        first.save(new_aggregate("p1"))
        with pytest.raises(RecordConflict):
            second.save(new_aggregate("p1"))
        stale = second.get(PolicyAddress(GLOBAL, PolicyId.parse("p1")))
        fresh = first.get(PolicyAddress(GLOBAL, PolicyId.parse("p1")))
        assert stale is not None and fresh is not None
        fresh.update_metadata(PolicyMetadata.parse({"title": "first"}), actor=TEST_ACTOR)
        first.save(fresh)
        stale.update_metadata(PolicyMetadata.parse({"title": "second"}), actor=TEST_ACTOR)
        with pytest.raises(RecordConflict):
            second.save(stale)
    finally:
        first.close()
        second.close()
