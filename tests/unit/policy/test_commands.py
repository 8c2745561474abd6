"""StoreEmbedding / UpdateEmbedding over the library's in-memory event store."""

from __future__ import annotations

from typing import Any

import pytest
from tests.fakes import (
    TEST_ACTOR,
    FakeModel,
    InMemoryAuditTrail,
    InMemoryPolicy,
    InMemoryProjectionWaiter,
)

from memory.application.embedding import ModelUnavailable
from memory.application.policy.commands import UPDATE_ATTEMPTS, NewPolicy, PolicyCommands
from memory.domain.errors import AlreadyExists, InvalidInput, NotFound
from memory.domain.policy.aggregate import PolicyEmbedding
from memory.domain.policy.dimensionality import DimensionalityMismatch
from memory.domain.policy.embedding_ref import embedding_ref_for
from memory.infrastructure.policy.event_store import EventSourcedPolicyLog

CountingModel = FakeModel


@pytest.fixture
def commands(
    memory_log: EventSourcedPolicyLog,
    waiter: InMemoryProjectionWaiter,
) -> tuple[PolicyCommands, CountingModel]:
    model = FakeModel()
    return (
        PolicyCommands(
            memory_log,
            model,
            waiter,
            audit=InMemoryAuditTrail(),
            max_content_chars=200,
            wait_timeout=1.0,
        ),
        model,
    )


def test_store_embeds_records_and_waits_for_the_projection(
    commands: tuple[PolicyCommands, CountingModel],
    memory_log: EventSourcedPolicyLog,
    policy: InMemoryPolicy,
    waiter: InMemoryProjectionWaiter,
) -> None:
    cmd, model = commands
    receipt = cmd.store("p1", "Travel must be approved.", {"title": "Travel"}, actor=TEST_ACTOR)
    assert receipt.version == 1
    assert receipt.embedding_ref == embedding_ref_for(PolicyEmbedding.create_id("p1", None))
    assert (receipt.model, receipt.dimensions, receipt.searchable) == ("hash:384", 384, True)
    assert model.documents == ["Travel must be approved."]
    assert waiter.waited_for == [1]
    assert len(policy.recorded()) == 1


def test_store_reports_not_yet_searchable_when_the_wait_times_out(
    commands: tuple[PolicyCommands, CountingModel], waiter: InMemoryProjectionWaiter
) -> None:
    waiter.paused = True
    assert not commands[0].store("p1", "text", actor=TEST_ACTOR).searchable


def test_storing_an_existing_policy_conflicts_without_embedding(
    commands: tuple[PolicyCommands, CountingModel], policy: InMemoryPolicy
) -> None:
    cmd, model = commands
    cmd.store("p1", "first", actor=TEST_ACTOR)
    with pytest.raises(AlreadyExists):
        cmd.store("p1", "second", actor=TEST_ACTOR)
    assert model.documents == ["first"]
    assert len(policy.recorded()) == 1


@pytest.mark.parametrize(
    ("policy_id", "content", "metadata", "field"),
    [
        ("bad id", "text", None, "policy_id"),
        ("p1", "", None, "content"),
        ("p1", "x" * 201, None, "content"),
        ("p1", "text", {"tags": "x"}, "metadata.tags"),
    ],
)
def test_invalid_input_changes_nothing_and_embeds_nothing(
    commands: tuple[PolicyCommands, CountingModel],
    memory_log: EventSourcedPolicyLog,
    policy: InMemoryPolicy,
    policy_id: str,
    content: str,
    metadata: Any,
    field: str,
) -> None:
    cmd, model = commands
    with pytest.raises(InvalidInput) as err:
        cmd.store(policy_id, content, metadata, actor=TEST_ACTOR)
    assert err.value.field == field
    assert model.documents == []
    assert policy.recorded() == []


def test_unavailable_model_records_nothing(
    commands: tuple[PolicyCommands, CountingModel],
    memory_log: EventSourcedPolicyLog,
    policy: InMemoryPolicy,
) -> None:
    cmd, model = commands
    model.down = True
    with pytest.raises(ModelUnavailable):
        cmd.store("p1", "text", actor=TEST_ACTOR)
    assert policy.recorded() == []
    model.down = False
    cmd.store("p1", "text", actor=TEST_ACTOR)
    model.down = True
    with pytest.raises(ModelUnavailable):
        cmd.update("p1", "new text", actor=TEST_ACTOR)
    assert len(policy.recorded()) == 1


def test_store_many_is_all_or_nothing(
    commands: tuple[PolicyCommands, CountingModel],
    memory_log: EventSourcedPolicyLog,
    policy: InMemoryPolicy,
) -> None:
    cmd, model = commands
    receipts = cmd.store_many([NewPolicy("a", "one"), NewPolicy("b", "two")], actor=TEST_ACTOR)
    assert [r.policy_id for r in receipts] == ["a", "b"]
    with pytest.raises(AlreadyExists):
        cmd.store_many([NewPolicy("c", "three"), NewPolicy("a", "again")], actor=TEST_ACTOR)
    with pytest.raises(InvalidInput) as err:
        cmd.store_many([NewPolicy("d", "four"), NewPolicy("e", "")], actor=TEST_ACTOR)
    assert err.value.field == "policies.1.content"
    assert len(policy.recorded()) == 2
    assert model.documents == ["one", "two"]


def test_every_bad_field_of_a_store_or_update_is_reported_and_nothing_changes(
    commands: tuple[PolicyCommands, CountingModel], policy: InMemoryPolicy
) -> None:
    cmd, model = commands
    with pytest.raises(InvalidInput) as err:
        cmd.store_many(
            [
                NewPolicy("", "one", {"title": 5}),
                NewPolicy("fine", "two"),
                NewPolicy("b", "   ", {"tags": "not-a-list"}),
            ],
            actor=TEST_ACTOR,
        )
    assert [f["field"] for f in err.value.details["fields"]] == [
        "policies.0.policy_id",
        "policies.0.metadata.title",
        "policies.2.content",
        "policies.2.metadata.tags",
    ]
    cmd.store("p1", "text", actor=TEST_ACTOR)
    with pytest.raises(InvalidInput) as err:
        cmd.update("p1", "x" * 201, {"source": 7}, actor=TEST_ACTOR)
    assert [f["field"] for f in err.value.details["fields"]] == ["content", "metadata.source"]
    assert model.documents == ["text"]
    assert len(policy.recorded()) == 1


def test_update_of_content_re_embeds_and_increments_the_version(
    commands: tuple[PolicyCommands, CountingModel],
) -> None:
    cmd, model = commands
    first = cmd.store("p1", "old text", {"title": "T"}, actor=TEST_ACTOR)
    receipt = cmd.update("p1", "new text", actor=TEST_ACTOR)
    assert receipt.version == 2
    assert receipt.stored_at > first.stored_at
    assert receipt.embedding_ref == first.embedding_ref
    assert model.documents == ["old text", "new text"]


def test_metadata_only_update_does_not_re_embed(
    commands: tuple[PolicyCommands, CountingModel],
    memory_log: EventSourcedPolicyLog,
    policy: InMemoryPolicy,
) -> None:
    cmd, model = commands
    cmd.store("p1", "text", {"title": "T"}, actor=TEST_ACTOR)
    receipt = cmd.update("p1", "text", {"title": "T2"}, actor=TEST_ACTOR)
    assert receipt.version == 2
    assert model.documents == ["text"]
    last = memory_log.events(memory_log_pid("p1"))[-1]
    assert isinstance(last, PolicyEmbedding.MetadataUpdated)


def memory_log_pid(text: str) -> Any:
    from memory.domain.policy.namespace import GLOBAL, PolicyAddress
    from memory.domain.policy.policy_id import PolicyId

    return PolicyAddress(GLOBAL, PolicyId.parse(text))


def test_omitted_metadata_keeps_the_current_one(
    commands: tuple[PolicyCommands, CountingModel], memory_log: EventSourcedPolicyLog
) -> None:
    cmd, _ = commands
    cmd.store("p1", "text", {"title": "T", "tags": ["a"]}, actor=TEST_ACTOR)
    cmd.update("p1", "changed text", actor=TEST_ACTOR)
    aggregate = memory_log.get(memory_log_pid("p1"))
    assert aggregate is not None
    assert aggregate.metadata.title == "T"
    assert aggregate.metadata.tags == ("a",)


def test_an_update_that_changes_nothing_records_nothing(
    commands: tuple[PolicyCommands, CountingModel],
    memory_log: EventSourcedPolicyLog,
    policy: InMemoryPolicy,
) -> None:
    cmd, model = commands
    cmd.store("p1", "text", {"title": "T"}, actor=TEST_ACTOR)
    receipt = cmd.update("p1", "text", {"title": "T"}, actor=TEST_ACTOR)
    assert receipt.version == 1
    assert len(policy.recorded()) == 1
    assert model.documents == ["text"]


def test_updating_an_unknown_policy_is_not_found_and_embeds_nothing(
    commands: tuple[PolicyCommands, CountingModel],
) -> None:
    cmd, model = commands
    with pytest.raises(NotFound):
        cmd.update("nope", "text", actor=TEST_ACTOR)
    assert model.documents == []


def test_a_concurrent_update_is_reapplied_to_the_newer_version(
    memory_log: EventSourcedPolicyLog,
    waiter: InMemoryProjectionWaiter,
) -> None:
    model = FakeModel()
    cmd = PolicyCommands(
        memory_log,
        model,
        waiter,
        audit=InMemoryAuditTrail(),
        max_content_chars=100,
        wait_timeout=1,
    )
    cmd.store("p1", "v1", actor=TEST_ACTOR)
    real_get = memory_log.get
    raced: list[bool] = []

    def get_then_race(pid: Any) -> PolicyEmbedding | None:
        aggregate = real_get(pid)
        if not raced:  # another writer records version 2 right after this read
            raced.append(True)
            other = real_get(pid)
            assert other is not None
            from memory.domain.policy.metadata import PolicyMetadata

            other.update_metadata(
                PolicyMetadata.parse({"title": "by the other writer"}), actor=TEST_ACTOR
            )
            memory_log.save(other)
        return aggregate

    memory_log.get = get_then_race  # type: ignore[method-assign]
    receipt = cmd.update("p1", "v2 text", actor=TEST_ACTOR)
    assert receipt.version == 3
    assert model.documents == ["v1", "v2 text"]  # embedded once, reused on the retry
    final = real_get(memory_log_pid("p1"))
    assert final is not None
    assert final.content == "v2 text"
    assert final.metadata.title == "by the other writer"


def test_a_model_of_the_wrong_size_is_refused_at_construction(
    memory_log: EventSourcedPolicyLog,
    waiter: InMemoryProjectionWaiter,
) -> None:
    with pytest.raises(DimensionalityMismatch):
        PolicyCommands(
            memory_log,
            FakeModel("hash:768", 768),
            waiter,
            audit=InMemoryAuditTrail(),
            max_content_chars=10,
            wait_timeout=1,
        )


def test_an_update_that_keeps_losing_the_race_gives_up_with_a_conflict(
    memory_log: EventSourcedPolicyLog,
    waiter: InMemoryProjectionWaiter,
) -> None:
    model = FakeModel()
    cmd = PolicyCommands(
        memory_log,
        model,
        waiter,
        audit=InMemoryAuditTrail(),
        max_content_chars=100,
        wait_timeout=1,
    )
    cmd.store("p1", "v1", actor=TEST_ACTOR)
    real_get = memory_log.get
    races = 0

    def get_then_race(pid: Any) -> PolicyEmbedding | None:
        nonlocal races
        aggregate = real_get(pid)
        other = real_get(pid)
        assert other is not None
        races += 1
        from memory.domain.policy.metadata import PolicyMetadata

        other.update_metadata(
            PolicyMetadata.parse({"title": f"other writer {races}"}), actor=TEST_ACTOR
        )
        memory_log.save(other)
        return aggregate

    memory_log.get = get_then_race  # type: ignore[method-assign]
    with pytest.raises(AlreadyExists, match="changed concurrently"):
        cmd.update("p1", "v2 text", actor=TEST_ACTOR)
    assert races == UPDATE_ATTEMPTS  # it tried that often, then told the caller to retry
    assert model.documents == ["v1", "v2 text"]  # embedded once for all attempts
