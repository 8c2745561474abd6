"""`PolicyModelStore`: a model swap's replay, the models' rows and positions, drops; the
same cases against the in-memory store and the PostgreSQL one (docs/adr/0125)."""

from __future__ import annotations

from tests.fakes import TEST_ACTOR, FakeModel
from tests.integration.port_contracts.implementations import ModelStoreSide

from memory.domain.policy.aggregate import PolicyEmbedding
from memory.domain.policy.content import PolicyContent
from memory.domain.policy.metadata import PolicyMetadata
from memory.domain.policy.namespace import GLOBAL, PolicyAddress
from memory.domain.policy.policy_id import PolicyId

OTHER = "test:other@384"


def record(side: ModelStoreSide, *texts: str) -> int:
    """Policies stored by the active model (its vectors in the events)."""
    model = FakeModel()
    aggregates = []
    for i, text in enumerate(texts):
        (vector,) = model.embed_documents([text])
        aggregates.append(
            PolicyEmbedding.store(
                PolicyAddress(GLOBAL, PolicyId.parse(f"p{i}")),
                PolicyContent.parse(text, max_chars=1000),
                PolicyMetadata(),
                model.identity,
                vector,
                actor=TEST_ACTOR,
            )
        )
    return side.log.save(*aggregates)


def test_a_reembed_replays_the_log_into_the_models_rows_and_a_drop_removes_them(
    model_store: ModelStoreSide,
) -> None:
    models = model_store.models
    assert (models.head(), models.rows_per_model(), models.position(OTHER)) == (None, {}, None)
    head = record(model_store, "first policy", "second policy", "third policy")
    seen: list[tuple[int | None, int | None]] = []
    report = models.reembed(OTHER, rebuild=False, on_progress=lambda *p: seen.append(p))
    assert (report.model, report.started_at, report.reached, report.head) == (
        OTHER,
        None,
        head,
        head,
    )
    assert (report.texts_embedded, report.rows_removed) == (3, 0)
    assert seen[-1] == (head, head)
    assert models.rows_per_model() == {OTHER: 3}
    assert (models.head(), models.position(OTHER)) == (head, head)
    assert [t.model for t in models.tracking_tables([OTHER])] == [OTHER]
    # Resumable: nothing new to embed.
    again = models.reembed(OTHER, rebuild=False, on_progress=None)
    assert (again.started_at, again.texts_embedded) == (head, 0)
    rebuilt = models.reembed(OTHER, rebuild=True, on_progress=None)
    assert (rebuilt.rows_removed, rebuilt.texts_embedded) == (3, 3)
    assert models.drop(OTHER) == 3
    assert models.rows_per_model() == {}
    assert models.stored_id(" ollama:bge-m3:latest ") == "ollama:bge-m3"
