"""`PolicyEventLog` and `PolicyLogOutlook`: policies recorded, read back and replaced,
concurrent writers refused, against the library's in-memory store and PostgreSQL (where a
save inside an audited change joins its transaction), docs/adr/0125."""

from __future__ import annotations

import pytest
from tests.fakes import TEST_ACTOR, FakeModel
from tests.integration.port_contracts.implementations import PolicyLogSide

from memory.application.audit.ports import AuditQuery
from memory.application.policy.ports import RecordConflict
from memory.domain.audit.admin_action import Action, AuditedChange
from memory.domain.policy.aggregate import PolicyEmbedding
from memory.domain.policy.content import PolicyContent
from memory.domain.policy.metadata import PolicyMetadata
from memory.domain.policy.namespace import GLOBAL, PolicyAddress
from memory.domain.policy.policy_id import PolicyId

MODEL = FakeModel()


def address(policy_id: str) -> PolicyAddress:
    return PolicyAddress(GLOBAL, PolicyId.parse(policy_id))


def stored(policy_id: str, text: str = "refunds need a receipt") -> PolicyEmbedding:
    (vector,) = MODEL.embed_documents([text])
    return PolicyEmbedding.store(
        address(policy_id),
        PolicyContent.parse(text, max_chars=1000),
        PolicyMetadata(),
        MODEL.identity,
        vector,
        actor=TEST_ACTOR,
    )


def new_text(aggregate: PolicyEmbedding, text: str) -> None:
    (vector,) = MODEL.embed_documents([text])
    aggregate.update_content(
        PolicyContent.parse(text, max_chars=1000),
        PolicyMetadata(),
        MODEL.identity,
        vector,
        actor=TEST_ACTOR,
    )


def test_policies_are_recorded_read_back_and_numbered_in_order(
    policy_log: PolicyLogSide,
) -> None:
    log = policy_log.log
    assert log.head() is None and log.get(address("p1")) is None
    assert log.events(address("p1")) == []
    first = log.save(stored("p1"))
    assert log.head() == first
    both = log.save(stored("p2"), stored("p3"))
    assert both > first and log.head() == both
    found = log.get(address("p1"))
    assert found is not None and (found.version, found.content) == (1, "refunds need a receipt")
    with pytest.raises(ValueError):
        log.save(found)  # nothing pending
    new_text(found, "refunds need a receipt and an order number")
    assert log.save(found) > both
    again = log.get(address("p1"))
    assert again is not None and again.content == "refunds need a receipt and an order number"
    assert [e.originator_version for e in log.events(address("p1"))] == [1, 2]


def test_a_later_content_is_seen_ahead_of_a_replay(policy_log: PolicyLogSide) -> None:
    log, outlook = policy_log.log, policy_log.outlook
    p1, p2 = stored("p1"), stored("p2")
    log.save(p1, p2)
    assert not outlook.has_later_content(p1.id, 1)
    new_text(p1, "a newer text")
    log.save(p1)
    assert outlook.has_later_content(p1.id, 1) and not outlook.has_later_content(p1.id, 2)
    p2.update_metadata(PolicyMetadata.parse({"title": "Refunds"}), actor=TEST_ACTOR)
    log.save(p2)
    assert not outlook.has_later_content(p2.id, 1)  # metadata is no new content


def test_a_concurrent_writer_is_refused_alone_or_inside_an_audited_change(
    policy_log: PolicyLogSide,
) -> None:
    log = policy_log.log
    log.save(stored("p1"))
    with pytest.raises(RecordConflict):
        log.save(stored("p1"))  # a second first store of the same policy
    mine, theirs = log.get(address("p1")), log.get(address("p1"))
    assert mine is not None and theirs is not None
    new_text(theirs, "theirs")
    log.save(theirs)
    new_text(mine, "mine")
    with pytest.raises(RecordConflict):
        log.save(mine)
    stale = log.get(address("p1"))
    assert stale is not None
    newer = log.get(address("p1"))
    assert newer is not None
    new_text(newer, "newer")
    log.save(newer)
    stale.delete(actor=TEST_ACTOR)

    def delete() -> tuple[int, AuditedChange]:
        return log.save(stale), AuditedChange(target="p1", before=None, after=None)

    head = log.head()
    with pytest.raises(RecordConflict):
        policy_log.audit.record(TEST_ACTOR, Action.POLICY_DELETED, delete)
    assert policy_log.audit.entries(AuditQuery()).entries == []
    assert log.head() == head
    current = log.get(address("p1"))
    assert current is not None and current.content == "newer" and not current.deleted
