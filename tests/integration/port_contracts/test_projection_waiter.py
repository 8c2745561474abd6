"""`ProjectionWaiter`: a writer waits until the active model's projection has processed its
event (read-your-writes, docs/adr/0026), against the in-memory waiter (whose projection runs
when a writer waits, while a projector "runs") and `TrackingWaiter` reading a real
projector's tracking table, as a writer in another process does (docs/adr/0125)."""

from __future__ import annotations

from tests.fakes import TEST_ACTOR, FakeModel
from tests.integration.port_contracts.implementations import WaiterSide

from memory.domain.policy.aggregate import PolicyEmbedding
from memory.domain.policy.content import PolicyContent
from memory.domain.policy.embedding_ref import embedding_ref_for
from memory.domain.policy.metadata import PolicyMetadata
from memory.domain.policy.namespace import GLOBAL, PolicyAddress
from memory.domain.policy.policy_id import PolicyId

# Long enough for a projector thread on a loaded machine; a wait that succeeds returns early.
PATIENCE = 30.0


def record(side: WaiterSide, policy_id: str) -> tuple[int, PolicyEmbedding]:
    model = FakeModel()
    text = f"the policy {policy_id} says what it says"
    (vector,) = model.embed_documents([text])
    aggregate = PolicyEmbedding.store(
        PolicyAddress(GLOBAL, PolicyId.parse(policy_id)),
        PolicyContent.parse(text, max_chars=1000),
        PolicyMetadata(),
        model.identity,
        vector,
        actor=TEST_ACTOR,
    )
    return side.log.save(aggregate), aggregate


def searchable(side: WaiterSide, aggregate: PolicyEmbedding) -> bool:
    found = side.read_model.get(embedding_ref_for(aggregate.id), None, PATIENCE, [GLOBAL])
    return found is not None


def test_a_write_is_searchable_once_the_running_projector_has_processed_it(
    waiter_side: WaiterSide,
) -> None:
    waiter_side.run_projector(True)
    first, stored = record(waiter_side, "p1")
    assert waiter_side.waiter.wait(first, PATIENCE)
    assert searchable(waiter_side, stored)
    second, later = record(waiter_side, "p2")
    assert waiter_side.waiter.wait(second, PATIENCE) and searchable(waiter_side, later)
    assert waiter_side.waiter.wait(first, 0)  # passed already: no wait at all


def test_without_a_projector_the_wait_ends_false_and_the_write_is_kept(
    waiter_side: WaiterSide,
) -> None:
    notification, stored = record(waiter_side, "p1")
    assert not waiter_side.waiter.wait(notification, 0.3)
    assert waiter_side.log.head() == notification and not searchable(waiter_side, stored)
    # A projector starting later (here or elsewhere) catches up; the writer's next wait sees it.
    waiter_side.run_projector(True)
    assert waiter_side.waiter.wait(notification, PATIENCE)
    assert searchable(waiter_side, stored)


def test_a_notification_never_recorded_is_never_reached(waiter_side: WaiterSide) -> None:
    waiter_side.run_projector(True)
    notification, _ = record(waiter_side, "p1")
    assert waiter_side.waiter.wait(notification, PATIENCE)
    assert not waiter_side.waiter.wait(notification + 1, 0.3)
