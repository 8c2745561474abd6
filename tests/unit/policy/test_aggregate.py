from __future__ import annotations

from uuid import uuid5

import pytest
from tests.fakes import TEST_ACTOR

from memory.domain.embedding import EmbeddingVector, ModelIdentity
from memory.domain.policy.aggregate import POLICY_NAMESPACE, PolicyEmbedding
from memory.domain.policy.content import PolicyContent
from memory.domain.policy.dimensionality import DimensionalityMismatch
from memory.domain.policy.embedding_ref import embedding_ref_for
from memory.domain.policy.metadata import PolicyMetadata
from memory.domain.policy.namespace import GLOBAL, PolicyAddress
from memory.domain.policy.policy_id import PolicyId
from memory.domain.policy.versions import VersionChange, version_history

MODEL = ModelIdentity("hash:384", 384)


def vec(seed: float, dims: int = 384) -> EmbeddingVector:
    return EmbeddingVector(tuple(seed + i / 1000 for i in range(dims))).normalised()


def stored(policy_id: str = "p1", text: str = "Travel must be approved.") -> PolicyEmbedding:
    return PolicyEmbedding.store(
        PolicyAddress(GLOBAL, PolicyId.parse(policy_id)),
        PolicyContent.parse(text, max_chars=1000),
        PolicyMetadata.parse({"title": "Travel", "tags": ["finance"]}),
        MODEL,
        vec(1.0),
        actor=TEST_ACTOR,
    )


def test_id_is_deterministic_from_the_policy_id() -> None:
    assert stored("p1").id == stored("p1").id == PolicyEmbedding.create_id("p1", None)
    assert stored("p1").id == uuid5(POLICY_NAMESPACE, "p1")
    assert stored("p1").id != stored("p2").id


def test_store_records_content_metadata_model_dimensions_and_vector() -> None:
    agg = stored()
    (event,) = agg.collect_events()
    assert isinstance(event, PolicyEmbedding.Stored)
    assert event.policy_id == "p1"
    assert event.content == "Travel must be approved."
    assert PolicyMetadata.from_canonical(event.metadata).title == "Travel"
    assert (event.model, event.dimensions, len(event.vector)) == ("hash:384", 384, 384)
    assert event.vector == list(vec(1.0).values)
    assert agg.version == 1


def test_new_content_records_a_content_event_with_everything_a_row_needs() -> None:
    agg = stored()
    agg.collect_events()
    agg.update_content(
        PolicyContent.parse("Travel needs two approvals.", max_chars=1000),
        agg.metadata,
        MODEL,
        vec(2.0),
        actor=TEST_ACTOR,
    )
    (event,) = agg.collect_events()
    assert isinstance(event, PolicyEmbedding.ContentUpdated)
    assert event.policy_id == "p1"
    assert event.stored_at == agg.created_on
    assert event.vector == list(vec(2.0).values)
    assert agg.version == 2
    assert agg.content == "Travel needs two approvals."


def test_unchanged_content_cannot_be_recorded_as_a_content_change() -> None:
    agg = stored()
    with pytest.raises(ValueError, match="unchanged"):
        agg.update_content(agg_content(agg), agg.metadata, MODEL, vec(3.0), actor=TEST_ACTOR)


def agg_content(agg: PolicyEmbedding) -> PolicyContent:
    return PolicyContent.parse(agg.content, max_chars=1000)


def test_metadata_only_change_keeps_the_vector_and_records_no_vector() -> None:
    agg = stored()
    agg.collect_events()
    before = list(agg.vector)
    assert agg.update_metadata(PolicyMetadata.parse({"title": "Travel (EU)"}), actor=TEST_ACTOR)
    (event,) = agg.collect_events()
    assert isinstance(event, PolicyEmbedding.MetadataUpdated)
    assert not hasattr(event, "vector")
    assert agg.vector == before
    assert agg.metadata.title == "Travel (EU)"


def test_equal_metadata_records_nothing() -> None:
    agg = stored()
    agg.collect_events()
    assert not agg.update_metadata(
        PolicyMetadata.parse({"tags": ["finance"], "title": "Travel"}), actor=TEST_ACTOR
    )
    assert agg.collect_events() == []


def test_fixed_dimensionality_refuses_other_sizes() -> None:
    with pytest.raises(DimensionalityMismatch, match="384"):
        PolicyEmbedding.store(
            PolicyAddress(GLOBAL, PolicyId.parse("p")),
            PolicyContent.parse("x", max_chars=10),
            PolicyMetadata(),
            ModelIdentity("hash:256", 256),
            vec(1.0, 256),
            actor=TEST_ACTOR,
        )
    agg = stored()
    with pytest.raises(DimensionalityMismatch):
        agg.update_content(
            PolicyContent.parse("y", max_chars=10),
            agg.metadata,
            MODEL,
            vec(1.0, 383),
            actor=TEST_ACTOR,
        )


def test_version_history_is_the_event_history() -> None:
    agg = stored()
    agg.update_content(
        PolicyContent.parse("v2 text", max_chars=100), agg.metadata, MODEL, vec(2), actor=TEST_ACTOR
    )
    agg.update_metadata(PolicyMetadata.parse({"title": "Renamed"}), actor=TEST_ACTOR)
    history = version_history(agg.collect_events())
    assert [v.version for v in history] == [1, 2, 3]
    assert [v.change for v in history] == [
        VersionChange.STORED,
        VersionChange.CONTENT,
        VersionChange.METADATA,
    ]
    assert history[1].content_sha256 == history[2].content_sha256 != history[0].content_sha256
    assert history[2].metadata.title == "Renamed"
    assert {v.embedding_ref for v in history} == {embedding_ref_for(agg.id)}
    assert history[0].recorded_at < history[1].recorded_at < history[2].recorded_at


def test_embedding_ref_is_stable_and_distinct_from_the_aggregate_id() -> None:
    agg = stored()
    assert embedding_ref_for(agg.id) == embedding_ref_for(PolicyEmbedding.create_id("p1", None))
    assert embedding_ref_for(agg.id) != agg.id


def test_a_deleted_policy_refuses_changes_until_stored_again() -> None:
    agg = stored()
    agg.delete(actor=TEST_ACTOR)
    assert agg.deleted
    with pytest.raises(ValueError, match="already deleted"):
        agg.delete(actor=TEST_ACTOR)
    with pytest.raises(ValueError, match="deleted"):
        agg.update_metadata(PolicyMetadata.parse({"title": "x"}), actor=TEST_ACTOR)
    with pytest.raises(ValueError, match="deleted"):
        agg.update_content(
            PolicyContent.parse("new", max_chars=100),
            agg.metadata,
            MODEL,
            vec(2.0),
            actor=TEST_ACTOR,
        )
    agg.store_again(
        PolicyContent.parse("back again", max_chars=100),
        PolicyMetadata.parse({}),
        MODEL,
        vec(3.0),
        actor=TEST_ACTOR,
    )
    assert (agg.deleted, agg.version, agg.content) == (False, 3, "back again")
    assert agg.stored_at == agg.modified_on > agg.created_on
    restarted = agg.stored_at
    agg.update_metadata(PolicyMetadata.parse({"title": "later"}), actor=TEST_ACTOR)
    assert agg.stored_at == restarted < agg.modified_on
    with pytest.raises(ValueError, match="update it instead"):
        agg.store_again(
            PolicyContent.parse("x", max_chars=100),
            PolicyMetadata.parse({}),
            MODEL,
            vec(3.0),
            actor=TEST_ACTOR,
        )
    changes = [v.change for v in version_history(agg.collect_events())]
    assert changes == [
        VersionChange.STORED,
        VersionChange.DELETED,
        VersionChange.STORED,
        VersionChange.METADATA,
    ]
