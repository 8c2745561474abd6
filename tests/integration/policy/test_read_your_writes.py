from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from tests.fakes import TEST_ACTOR
from tests.integration.policy.conftest import MakeRuntime, StartProjector

from memory.domain.policy.search import PolicySearch
from memory.entrypoints.policy_runtime import PolicyRuntime
from memory.infrastructure.postgres.database import Database


def test_a_search_right_after_a_store_finds_the_policy(runtime: PolicyRuntime) -> None:
    for i in range(20):
        text = f"policy number {i} about topic{i} and subject{i}"
        receipt = runtime.service.store(f"p{i}", text, {"title": f"T{i}"}, actor=TEST_ACTOR)
        assert receipt.searchable
        answer = runtime.service.search(PolicySearch(text, similarity_threshold=0.99, limit=1))
        assert [r.policy_id for r in answer.results] == [f"p{i}"]
        assert answer.results[0].embedding_ref == receipt.embedding_ref


def test_an_update_is_visible_to_the_next_read(runtime: PolicyRuntime) -> None:
    first = runtime.service.store(
        "p1", "old wording of the rule", {"title": "Old"}, actor=TEST_ACTOR
    )
    second = runtime.service.update(
        "p1", "entirely different new phrasing", {"title": "New"}, actor=TEST_ACTOR
    )
    assert (second.version, second.searchable) == (2, True)
    document = runtime.service.get_by_embedding(str(first.embedding_ref))
    assert (document.version, document.content) == (2, "entirely different new phrasing")
    assert document.metadata.title == "New"
    answer = runtime.service.search(
        PolicySearch("entirely different new phrasing", similarity_threshold=0.99)
    )
    assert [(r.policy_id, r.version) for r in answer.results] == [("p1", 2)]


def test_the_wait_is_short_when_the_projector_runs_here(runtime: PolicyRuntime) -> None:
    runtime.service.store("warm", "warm up", actor=TEST_ACTOR)
    started = time.perf_counter()
    for i in range(10):
        runtime.service.store(f"p{i}", f"text {i}", actor=TEST_ACTOR)
    assert (time.perf_counter() - started) / 10 < 0.2


def test_without_a_projector_a_write_is_recorded_but_not_yet_searchable(
    make_runtime: MakeRuntime,
    start_projector: StartProjector,
    read_rows: Callable[[str], dict[str, Any]],
) -> None:
    runtime = make_runtime(projection_wait_timeout=0.2)
    started = time.perf_counter()
    receipt = runtime.service.store("p1", "recorded while no projector runs", actor=TEST_ACTOR)
    assert not receipt.searchable
    assert 0.2 <= time.perf_counter() - started < 2.0
    assert [v.version for v in runtime.service.versions("p1")] == [1]
    assert read_rows("hash:384") == {}
    projector = start_projector(runtime)
    projector.catch_up(runtime.log.head())
    assert set(read_rows("hash:384")) == {"p1"}


def test_events_live_in_the_library_event_store(
    make_runtime: MakeRuntime, policy_db: Database
) -> None:
    runtime = make_runtime(projection_wait_timeout=0)
    runtime.service.store("p1", "one", actor=TEST_ACTOR)
    runtime.service.update("p1", "two", actor=TEST_ACTOR)
    runtime.service.update("p1", "two", {"title": "t"}, actor=TEST_ACTOR)
    with policy_db.connection() as conn:
        topics = [
            r["topic"]
            for r in conn.execute("SELECT topic FROM policy_events ORDER BY notification_id")
        ]
    assert [str(t).rsplit(".", 1)[-1] for t in topics] == [
        "Stored",
        "ContentUpdated",
        "MetadataUpdated",
    ]
