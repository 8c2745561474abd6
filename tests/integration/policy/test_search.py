"""SearchEmbeddings and GetPolicyByEmbedding against real PostgreSQL + pgvector."""

from __future__ import annotations

import threading
import time
from datetime import datetime
from typing import Any

import psycopg
import pytest
from tests.fakes import TEST_ACTOR
from tests.integration.policy.conftest import MakeRuntime, StartProjector

from memory.application.errors import DeadlineExceeded
from memory.application.policy.commands import NewPolicy
from memory.domain.errors import InvalidInput
from memory.domain.policy.filters import SearchFilter, TagMatch, TagMode
from memory.domain.policy.pagination import PageRequest
from memory.domain.policy.search import PolicySearch, SearchRequest, SimilarityResult
from memory.domain.policy.threshold import SimilarityThreshold
from memory.domain.relevance import ScriptGroup, relevances
from memory.entrypoints.policy_runtime import PolicyRuntime
from memory.infrastructure.policy.model_objects import ModelObjects
from memory.infrastructure.policy.read_model import PostgresPolicyReadModel
from memory.infrastructure.postgres.database import Database

SOURCES = ("hr", "finance", "it")
QUERY = "travel expenses approval policy"


@pytest.fixture
def corpus(
    make_runtime: MakeRuntime, start_projector: StartProjector
) -> tuple[PolicyRuntime, datetime]:
    """60 policies sharing words with QUERY in varying amounts, two exact duplicates, and
    metadata to filter on. Returns the runtime and a time between the two halves."""
    runtime = make_runtime()
    start_projector(runtime)
    words = ["travel", "expenses", "approval", "policy", "remote", "laptop", "leave", "audit"]

    def policy(i: int) -> NewPolicy:
        text = " ".join(words[(i + k) % len(words)] for k in range(1 + i % 5)) + f" item{i}"
        return NewPolicy(
            f"p{i:02d}",
            text,
            {
                "title": f"Title {i % 4}",
                "source": SOURCES[i % 3],
                "tags": [f"t{i % 2}", f"g{i % 5}"],
                "level": i % 3,
                "owner": {"team": "a" if i < 30 else "b"},
            },
        )

    runtime.service.store_many([policy(i) for i in range(30)], actor=TEST_ACTOR)
    middle = datetime.now().astimezone()
    time.sleep(0.01)
    runtime.service.store_many([policy(i) for i in range(30, 60)], actor=TEST_ACTOR)
    runtime.service.store_many(
        [NewPolicy("dup-a", "duplicate travel text"), NewPolicy("dup-b", "duplicate travel text")],
        actor=TEST_ACTOR,
    )
    return runtime, middle


def all_results(runtime: PolicyRuntime, **kwargs: Any) -> list[SimilarityResult]:
    return runtime.service.search(PolicySearch(QUERY, limit=200, **kwargs)).results


def set_mode(runtime: PolicyRuntime, mode: str) -> None:
    runtime.read_model.mode = mode  # type: ignore[attr-defined]


@pytest.mark.parametrize("mode", ["hnsw", "exact"])
def test_results_are_ranked_thresholded_and_ties_ordered_by_reference(
    corpus: tuple[PolicyRuntime, datetime], mode: str
) -> None:
    runtime, _ = corpus
    set_mode(runtime, mode)
    results = all_results(runtime, similarity_threshold=0.3)
    assert results
    assert all(r.similarity >= 0.3 for r in results)
    keys = [(-r.similarity, str(r.embedding_ref)) for r in results]
    assert keys == sorted(keys)
    duplicates = runtime.service.search(
        PolicySearch("duplicate travel text", similarity_threshold=0.99, limit=10)
    ).results
    assert [r.policy_id for r in duplicates] == sorted(
        ["dup-a", "dup-b"], key=lambda p: str(_ref(runtime, p))
    )
    assert duplicates[0].similarity == duplicates[1].similarity == pytest.approx(1.0, abs=1e-3)


def _ref(runtime: PolicyRuntime, policy_id: str) -> Any:
    return runtime.service.versions(policy_id)[0].embedding_ref


def test_hnsw_and_exact_agree_on_a_small_corpus(corpus: tuple[PolicyRuntime, datetime]) -> None:
    runtime, _ = corpus
    set_mode(runtime, "exact")
    exact = [r.policy_id for r in all_results(runtime, similarity_threshold=0.2)]
    set_mode(runtime, "hnsw")
    approximate = [r.policy_id for r in all_results(runtime, similarity_threshold=0.2)]
    assert approximate == exact


@pytest.mark.parametrize("mode", ["hnsw", "exact"])
def test_cursor_pages_walk_the_whole_list_without_gaps_or_repeats(
    corpus: tuple[PolicyRuntime, datetime], mode: str
) -> None:
    runtime, _ = corpus
    set_mode(runtime, mode)
    everything = [r.embedding_ref for r in all_results(runtime, similarity_threshold=0.1)]
    assert len(everything) > 20
    walked, cursor, pages = [], None, 0
    while True:
        answer = runtime.service.search(
            PolicySearch(QUERY, similarity_threshold=0.1, limit=7, cursor=cursor)
        )
        walked += [r.embedding_ref for r in answer.results]
        pages += 1
        cursor = answer.next_cursor
        if cursor is None:
            break
    assert walked == everything
    assert pages == -(-len(everything) // 7) or pages == len(everything) // 7 + 1


def test_offset_pages_are_slices_of_the_ranking_and_max_results_caps(
    corpus: tuple[PolicyRuntime, datetime],
) -> None:
    runtime, _ = corpus
    everything = [r.policy_id for r in all_results(runtime, similarity_threshold=0.1)]
    page = runtime.service.search(PolicySearch(QUERY, similarity_threshold=0.1, limit=5, offset=10))
    assert [r.policy_id for r in page.results] == everything[10:15]
    capped = runtime.service.search(
        PolicySearch(QUERY, similarity_threshold=0.1, limit=10, max_results=3)
    )
    assert [r.policy_id for r in capped.results] == everything[:3]
    assert capped.next_cursor is not None
    follow = runtime.service.search(
        PolicySearch(
            QUERY, similarity_threshold=0.1, limit=10, max_results=3, cursor=capped.next_cursor
        )
    )
    assert [r.policy_id for r in follow.results] == everything[3:6]


def test_a_cursor_only_continues_its_own_search(corpus: tuple[PolicyRuntime, datetime]) -> None:
    runtime, _ = corpus
    answer = runtime.service.search(PolicySearch(QUERY, similarity_threshold=0.1, limit=3))
    assert answer.next_cursor is not None
    with pytest.raises(InvalidInput, match="different search"):
        runtime.service.search(
            PolicySearch("another query", similarity_threshold=0.1, cursor=answer.next_cursor)
        )
    with pytest.raises(InvalidInput, match="different search"):
        runtime.service.search(
            PolicySearch(QUERY, similarity_threshold=0.2, cursor=answer.next_cursor)
        )


@pytest.mark.parametrize("mode", ["hnsw", "exact"])
@pytest.mark.parametrize(
    ("filter_", "holds"),
    [
        ({"source": "finance"}, lambda m: m.get("source") == "finance"),
        ({"title": "Title 2"}, lambda m: m.get("title") == "Title 2"),
        ({"tags": {"any": ["g1", "g2"]}}, lambda m: {"g1", "g2"} & set(m.get("tags", []))),
        ({"tags": {"all": ["t0", "g2"]}}, lambda m: {"t0", "g2"} <= set(m.get("tags", []))),
        ({"metadata": {"level": 2}}, lambda m: m.get("level") == 2),
        (
            {"metadata": {"level": 1, "source": "finance"}},
            lambda m: (m.get("level"), m.get("source")) == (1, "finance"),
        ),
        (
            {"source": "hr", "tags": {"any": ["t1"]}},
            lambda m: m.get("source") == "hr" and "t1" in m.get("tags", []),
        ),
    ],
)
def test_metadata_filters_return_exactly_the_matching_policies(
    corpus: tuple[PolicyRuntime, datetime], mode: str, filter_: dict[str, Any], holds: Any
) -> None:
    runtime, _ = corpus
    set_mode(runtime, "exact")
    unfiltered = all_results(runtime, similarity_threshold=0.0)
    expected = [r.policy_id for r in unfiltered if holds(r.metadata.to_json())]
    assert expected
    set_mode(runtime, mode)
    got = [r.policy_id for r in all_results(runtime, similarity_threshold=0.0, filter=filter_)]
    assert got == expected


def test_time_range_filter_uses_the_version_timestamp(
    corpus: tuple[PolicyRuntime, datetime],
) -> None:
    runtime, middle = corpus
    later = all_results(
        runtime, similarity_threshold=0.0, filter={"timestamp": {"gte": middle.isoformat()}}
    )
    earlier = all_results(
        runtime, similarity_threshold=0.0, filter={"timestamp": {"lt": middle.isoformat()}}
    )
    assert {r.policy_id for r in earlier} == {f"p{i:02d}" for i in range(30)}
    assert {r.policy_id for r in later} == {f"p{i:02d}" for i in range(30, 60)} | {"dup-a", "dup-b"}
    assert all(r.timestamp >= middle for r in later)


def test_get_by_embedding_returns_the_document_with_similarity_only_from_search(
    corpus: tuple[PolicyRuntime, datetime],
) -> None:
    runtime, _ = corpus
    ref = str(_ref(runtime, "dup-a"))
    direct = runtime.service.get_by_embedding(ref)
    assert (direct.policy_id, direct.content, direct.similarity) == (
        "dup-a",
        "duplicate travel text",
        None,
    )
    searched = runtime.service.get_by_embedding(ref, origin="search", query="duplicate travel text")
    assert searched.similarity == pytest.approx(1.0, abs=1e-3)


def test_the_database_enforces_the_search_timeout(
    corpus: tuple[PolicyRuntime, datetime], policy_db: Database, make_runtime: MakeRuntime
) -> None:
    hurried = make_runtime(search_timeout=0.3)
    locked, release = threading.Event(), threading.Event()

    def hold_lock() -> None:
        with psycopg.connect(policy_db.url) as conn:
            conn.execute("LOCK TABLE policy_embeddings IN ACCESS EXCLUSIVE MODE")
            locked.set()
            release.wait(10)

    holder = threading.Thread(target=hold_lock)
    holder.start()
    try:
        assert locked.wait(10)
        started = time.perf_counter()
        with pytest.raises(DeadlineExceeded) as err:
            hurried.service.search(QUERY)
        assert 0.2 < time.perf_counter() - started < 2.0
        assert err.value.code == "timeout"
        assert err.value.details["stage"] == "database"
    finally:
        release.set()
        holder.join()


def test_a_spent_budget_stops_before_the_database(
    corpus: tuple[PolicyRuntime, datetime], make_runtime: MakeRuntime
) -> None:
    with pytest.raises(DeadlineExceeded) as err:
        make_runtime(search_timeout=1e-9).service.search(QUERY)
    assert "embedding" in err.value.details["stage"]


def test_the_projector_creates_the_models_partial_hnsw_index(
    corpus: tuple[PolicyRuntime, datetime], policy_db: Database
) -> None:
    with policy_db.connection() as conn:
        row = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE indexname = %s",
            (ModelObjects("hash:384").hnsw_index,),
        ).fetchone()
    assert row is not None
    definition = str(row["indexdef"])
    assert "hnsw" in definition
    assert "halfvec_cosine_ops" in definition
    assert "'hash:384'::text" in definition


@pytest.mark.parametrize("mode", ["hnsw", "exact"])
def test_results_carry_relevance_and_min_relevance_is_the_alternative_threshold(
    corpus: tuple[PolicyRuntime, datetime], mode: str
) -> None:
    runtime, _ = corpus
    set_mode(runtime, mode)
    everything = all_results(runtime, similarity_threshold=0.0)
    # The reference: the query's relevance against every policy (one script group here).
    rel = relevances([(ScriptGroup.OTHER, r.similarity) for r in everything])
    assert len(everything) == 62
    for result, expected in zip(everything, rel, strict=True):
        assert result.relevance == pytest.approx(expected, abs=1e-6)
    floor = sorted(r.relevance or 0.0 for r in everything)[-10]
    answer = runtime.service.search(PolicySearch(QUERY, limit=200, min_relevance=floor))
    # Asked alone, min_relevance replaces the model's default threshold.
    assert answer.threshold == 0.0 and answer.min_relevance == floor
    assert [r.policy_id for r in answer.results] == [
        r.policy_id for r in everything if (r.relevance or 0.0) >= floor - 1e-9
    ]
    # Pages of a min_relevance search walk the same list.
    first = runtime.service.search(PolicySearch(QUERY, limit=4, min_relevance=floor))
    second = runtime.service.search(
        PolicySearch(QUERY, limit=4, min_relevance=floor, cursor=first.next_cursor)
    )
    assert [r.policy_id for r in first.results + second.results] == [
        r.policy_id for r in answer.results[:8]
    ]
    for bad in (-0.5, 11.0, float("nan")):
        with pytest.raises(InvalidInput) as raised:
            runtime.service.search(PolicySearch(QUERY, min_relevance=bad))
        assert raised.value.field == "min_relevance"


def test_a_selective_filter_is_searched_exactly_instead_of_walking_the_graph(
    corpus: tuple[PolicyRuntime, datetime], policy_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A filter the planner expects to keep few rows is answered by an exact scan of those
    rows, not by a graph walk past the rows it rejects (docs/adr/0135); an unfiltered
    search still walks the graph."""
    runtime, _ = corpus
    model_id = runtime.model.identity.id
    hnsw = PostgresPolicyReadModel(policy_db, model_id, mode="hnsw")
    exact = PostgresPolicyReadModel(policy_db, model_id, mode="exact")
    walks: list[int] = []
    walk = hnsw._nearest

    def counted(*args: Any) -> list[dict[str, Any]]:
        walks.append(1)
        return walk(*args)

    monkeypatch.setattr(hnsw, "_nearest", counted)
    vector = runtime.model.embed_query(QUERY)

    def request(search_filter: SearchFilter) -> SearchRequest:
        return SearchRequest(QUERY, SimilarityThreshold(0.0), PageRequest(limit=5), search_filter)

    selective = request(SearchFilter(tags=TagMatch(TagMode.ANY, ("g0",))))
    found = hnsw.search(vector, selective, None, 5.0)
    expected = exact.search(vector, selective, None, 5.0)
    assert walks == []
    assert [r.embedding_ref for r in found.results] == [r.embedding_ref for r in expected.results]
    assert len(found.results) == 5

    hnsw.search(vector, request(SearchFilter()), None, 5.0)
    assert walks == [1]
