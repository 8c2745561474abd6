"""`PolicyEmbeddingsView` + `PolicyReadModel` + `PolicySimilarityDistribution`: the same
cases against the in-memory table and `policy_embeddings` (docs/adr/0125)."""

from __future__ import annotations

import math
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from eventsourcing.persistence import Tracking
from tests.integration.port_contracts.implementations import POLICY_MODEL, PolicyTable

from memory.application.errors import DeadlineExceeded
from memory.application.policy.projection import MetadataRevision, PolicyRow
from memory.domain.embedding import EmbeddingVector
from memory.domain.policy.content import content_sha256
from memory.domain.policy.cursor import SearchCursor
from memory.domain.policy.filters import SearchFilter
from memory.domain.policy.listing import ListPosition, ListRequest
from memory.domain.policy.metadata import PolicyMetadata
from memory.domain.policy.namespace import GLOBAL, PolicyNamespace
from memory.domain.policy.pagination import PageRequest
from memory.domain.policy.search import SearchRequest
from memory.domain.policy.threshold import SimilarityThreshold
from memory.domain.relevance import ScriptGroup
from memory.infrastructure.policy.event_store import PolicyApplication

DIMENSIONS = 384
T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
ACME = PolicyNamespace.of_org("acme")
GLOBEX = PolicyNamespace.of_org("globex")
# The query: the first axis. A row at `degrees` from it has similarity cos(degrees); ten
# degrees apart keeps distances far apart at half precision (the table's halfvec).
QUERY = EmbeddingVector(tuple([1.0] + [0.0] * (DIMENSIONS - 1)))


def at_angle(degrees: float) -> tuple[float, ...]:
    a = math.radians(degrees)
    return (math.cos(a), math.sin(a)) + (0.0,) * (DIMENSIONS - 2)


def ref(n: int) -> uuid.UUID:
    return uuid.UUID(int=n)


def row(
    n: int,
    degrees: float,
    *,
    version: int = 1,
    namespace: PolicyNamespace = GLOBAL,
    content: str | None = None,
    model: str = POLICY_MODEL,
    **metadata: object,
) -> PolicyRow:
    text = content or f"policy {n}"
    return PolicyRow(
        embedding_ref=ref(n),
        model=model,
        policy_id=f"p{n}",
        version=version,
        vector=at_angle(degrees),
        metadata=PolicyMetadata.parse(metadata or None),
        content=text,
        content_sha256=content_sha256(text),
        created_at=T0 + timedelta(minutes=n),
        updated_at=T0 + timedelta(minutes=n),
        namespace=namespace,
    )


class Writes:
    """Writes through the view, each with the next tracking position."""

    def __init__(self, table: PolicyTable) -> None:
        self.table = table
        self.position = 0

    def tracking(self) -> Tracking:
        self.position += 1
        return Tracking(PolicyApplication.name, self.position)

    def upsert(self, *rows: PolicyRow) -> None:
        for r in rows:
            self.table.view.upsert_row(r, self.tracking())


def search(
    table: PolicyTable,
    *,
    threshold: float = 0.0,
    size: int = 50,
    offset: int = 0,
    view: tuple[PolicyNamespace, ...] = (GLOBAL,),
    filter: object = None,
    floors: tuple[tuple[ScriptGroup, float], ...] = (),
    after: object = None,
) -> tuple[list[str], bool]:
    request = SearchRequest(
        query="q",
        threshold=SimilarityThreshold(threshold),
        page=PageRequest.parse(limit=size, offset=offset or None),
        filter=SearchFilter.parse(filter),
        view=view,
        group_floors=floors,
    )
    rows = table.read_model.search(QUERY, request, after, 5.0)  # type: ignore[arg-type]
    return [r.policy_id for r in rows.results], rows.has_more


def test_results_are_ordered_by_distance_then_reference_above_the_threshold(
    policy_table: PolicyTable,
) -> None:
    writes = Writes(policy_table)
    writes.upsert(row(3, 40), row(1, 10), row(2, 10), row(4, 0), row(5, 80))
    assert search(policy_table) == (["p4", "p1", "p2", "p3", "p5"], False)
    # cos(40 degrees) = 0.766: a threshold of 0.7 keeps it, cos(80 degrees) = 0.17 not.
    assert search(policy_table, threshold=0.7) == (["p4", "p1", "p2", "p3"], False)
    assert search(policy_table, size=2) == (["p4", "p1"], True)
    assert search(policy_table, size=2, offset=2) == (["p2", "p3"], True)
    assert policy_table.view.max_tracking_id(PolicyApplication.name) == 5


def test_similarities_are_one_minus_the_cosine_distance(policy_table: PolicyTable) -> None:
    Writes(policy_table).upsert(row(1, 60))
    request = SearchRequest("q", SimilarityThreshold(0.0), PageRequest.parse(), SearchFilter())
    (result,) = policy_table.read_model.search(QUERY, request, None, 5.0).results
    assert result.similarity == pytest.approx(0.5, abs=2e-3)
    assert result.distance == pytest.approx(0.5, abs=2e-3)
    assert result.script_group is ScriptGroup.OTHER


def test_a_cursor_continues_after_the_last_distance_and_reference(
    policy_table: PolicyTable,
) -> None:
    writes = Writes(policy_table)
    writes.upsert(row(1, 10), row(2, 10), row(3, 20), row(4, 30))
    request = SearchRequest(
        "q", SimilarityThreshold(0.0), PageRequest.parse(limit=2), SearchFilter()
    )
    first = policy_table.read_model.search(QUERY, request, None, 5.0)
    last = first.results[-1]
    after = SearchCursor(last.distance, last.embedding_ref, "f")
    second = policy_table.read_model.search(QUERY, request, after, 5.0)
    assert [r.policy_id for r in first.results] == ["p1", "p2"]
    assert [r.policy_id for r in second.results] == ["p3", "p4"]
    assert first.has_more and not second.has_more


def test_a_search_reads_only_the_namespaces_of_its_view(policy_table: PolicyTable) -> None:
    writes = Writes(policy_table)
    writes.upsert(row(1, 10), row(2, 20, namespace=ACME), row(3, 30, namespace=GLOBEX))
    assert search(policy_table)[0] == ["p1"]
    assert search(policy_table, view=ACME.visible())[0] == ["p1", "p2"]
    assert search(policy_table, view=(ACME,))[0] == ["p2"]


def test_filters_on_source_title_tags_metadata_and_time(policy_table: PolicyTable) -> None:
    writes = Writes(policy_table)
    writes.upsert(
        row(1, 10, source="hr", title="Leave", tags=["a", "b"], level=1, flag=True),
        row(2, 20, source="it", title="Laptops", tags=["b"], level=2, flag=1),
        row(3, 30, source="hr", tags=["c"], owner={"team": "x"}),
    )
    assert search(policy_table, filter={"source": "hr"})[0] == ["p1", "p3"]
    assert search(policy_table, filter={"title": "Laptops"})[0] == ["p2"]
    assert search(policy_table, filter={"tags": {"any": ["a", "c"]}})[0] == ["p1", "p3"]
    assert search(policy_table, filter={"tags": {"all": ["a", "b"]}})[0] == ["p1"]
    assert search(policy_table, filter={"metadata": {"level": 2}})[0] == ["p2"]
    # JSON's true is not 1.
    assert search(policy_table, filter={"metadata": {"flag": True}})[0] == ["p1"]
    assert search(policy_table, filter={"metadata": {"flag": 1}})[0] == ["p2"]
    after_p1 = (T0 + timedelta(minutes=1)).isoformat()
    assert search(policy_table, filter={"timestamp": {"gt": after_p1}})[0] == ["p2", "p3"]
    assert search(policy_table, filter={"timestamp": {"lte": after_p1}})[0] == ["p1"]


def test_relevance_floors_apply_per_script_group(policy_table: PolicyTable) -> None:
    writes = Writes(policy_table)
    writes.upsert(
        row(1, 10, content="请假需要经理批准"), row(2, 40, content="请假政策"), row(3, 40)
    )
    floors = ((ScriptGroup.HAN, 0.9), (ScriptGroup.OTHER, 0.0))
    assert search(policy_table, floors=floors)[0] == ["p1", "p3"]


def test_an_older_version_never_replaces_a_newer_row(policy_table: PolicyTable) -> None:
    writes = Writes(policy_table)
    writes.upsert(row(1, 10, version=3, title="three"))
    writes.upsert(row(1, 60, version=2, title="two"))
    document = policy_table.read_model.get(ref(1), None, 5.0, (GLOBAL,))
    assert document is not None
    assert (document.version, document.metadata.title) == (3, "three")
    revision = MetadataRevision(ref(1), POLICY_MODEL, 2, PolicyMetadata(title="old"), T0)
    policy_table.view.revise_metadata(revision, writes.tracking())
    newer = replace(revision, version=4, metadata=PolicyMetadata(title="four"))
    policy_table.view.revise_metadata(newer, writes.tracking())
    document = policy_table.read_model.get(ref(1), QUERY, 5.0, (GLOBAL,))
    assert document is not None
    assert (document.version, document.metadata.title) == (4, "four")
    assert document.similarity == pytest.approx(math.cos(math.radians(10)), abs=2e-3)


def test_removals(policy_table: PolicyTable) -> None:
    writes = Writes(policy_table)
    writes.upsert(row(1, 10, version=2), row(2, 20), row(3, 30, version=5))
    writes.upsert(row(1, 10, version=2, model="other:384"))
    policy_table.view.remove_row(ref(2), POLICY_MODEL, writes.tracking())
    # A deletion at version 3 removes rows older than it (of every model), not newer ones.
    policy_table.view.remove_deleted(ref(1), 3, writes.tracking())
    policy_table.view.remove_deleted(ref(3), 3, writes.tracking())
    assert search(policy_table)[0] == ["p3"]
    assert policy_table.view.max_tracking_id(PolicyApplication.name) == writes.position


def test_get_answers_only_inside_the_view(policy_table: PolicyTable) -> None:
    Writes(policy_table).upsert(row(1, 10, namespace=ACME))
    assert policy_table.read_model.get(ref(1), None, 5.0, (GLOBAL,)) is None
    document = policy_table.read_model.get(ref(1), None, 5.0, ACME.visible())
    assert document is not None
    assert (document.policy_id, document.namespace, document.similarity) == ("p1", ACME, None)
    assert policy_table.read_model.get(ref(9), None, 5.0, ACME.visible()) is None


def test_listing_is_newest_first_filtered_and_keyset_paged(policy_table: PolicyTable) -> None:
    writes = Writes(policy_table)
    writes.upsert(
        row(1, 10, source="hr", tags=["a"]),
        row(2, 20, source="it"),
        row(3, 30, source="hr", tags=["a", "b"]),
        row(4, 40, namespace=GLOBEX),
    )

    def listed(after: ListPosition | None = None, **fields: object) -> tuple[list[str], bool]:
        request = ListRequest(
            limit=int(fields.pop("limit", 50)),  # type: ignore[call-overload]
            source=fields.pop("source", None),  # type: ignore[arg-type]
            tag=fields.pop("tag", None),  # type: ignore[arg-type]
            updated_since=fields.pop("since", None),  # type: ignore[arg-type]
        )
        rows = policy_table.read_model.list_policies(request, after, 5.0)
        return [p.policy_id for p in rows.policies], rows.has_more

    assert listed() == (["p3", "p2", "p1"], False)
    assert listed(source="hr") == (["p3", "p1"], False)
    assert listed(tag="b") == (["p3"], False)
    assert listed(since=T0 + timedelta(minutes=2)) == (["p3", "p2"], False)
    assert listed(limit=2) == (["p3", "p2"], True)
    after = ListPosition(T0 + timedelta(minutes=2), ref(2))
    assert listed(after, limit=2) == (["p1"], False)


def test_a_spent_budget_is_refused_before_reading(policy_table: PolicyTable) -> None:
    request = SearchRequest("q", SimilarityThreshold(0.0), PageRequest.parse(), SearchFilter())
    with pytest.raises(DeadlineExceeded):
        policy_table.read_model.search(QUERY, request, None, 0.0)
    with pytest.raises(DeadlineExceeded):
        policy_table.distribution.distribution(QUERY, (GLOBAL,), 0.0)


def test_the_distribution_is_per_script_group_over_the_view(policy_table: PolicyTable) -> None:
    writes = Writes(policy_table)
    writes.upsert(row(1, 0), row(2, 60), row(3, 0, namespace=GLOBEX), row(4, 0, content="请假"))
    distribution = policy_table.distribution.distribution(QUERY, (GLOBAL,), 5.0)
    other, han = distribution.groups[ScriptGroup.OTHER], distribution.groups[ScriptGroup.HAN]
    # The global "other" rows' similarities are 1.0 and 0.5; GLOBEX's row is not in view.
    assert (other.count, han.count, distribution.overall.count) == (2, 1, 3)
    assert (other.mean, other.std) == (pytest.approx(0.75, abs=2e-3), pytest.approx(0.25, abs=2e-3))
    assert (han.mean, han.std) == (pytest.approx(1.0, abs=2e-3), pytest.approx(0.0, abs=2e-3))
    assert distribution.overall.mean == pytest.approx(2.5 / 3, abs=2e-3)
