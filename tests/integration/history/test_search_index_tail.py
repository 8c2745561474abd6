"""The tail of an org's search index (docs/adr/0153): once an org's index is ready, the sweep
writes its new windows outside the graph (bounded per org), search scans them exactly beside
the walk, and the index builder merges them into the graph off the sweep's path. Search
answers as the exact scan does throughout; erasure and retention reach the tail's windows
as any others."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from tests.fakes import TEST_ACTOR, FakeModel

from memory.domain.history.search import HistoryQuery, MatchedBy
from memory.entrypoints.history_runtime import HistoryRuntime
from memory.entrypoints.workers.history_indexes import WindowIndexBuilder
from memory.infrastructure.history import embeddings
from memory.infrastructure.history.embeddings import index_path_settings, indexed_statement

CHATTER = [
    "the team lunch moved to the noodle place on Jalan Alor",
    "who took the blue stapler from the front desk yesterday",
    "remember the quarterly town hall starts at four sharp",
    "my train was late again because of signal trouble",
    "the new coffee beans in the pantry taste like chocolate",
    "please water the plants near the window this weekend",
]
NEW = "the forklift in the warehouse broke so the delivery is late today"
QUERY = "forklift broke delivery late please"
MODEL = "hash:1024"


def seed(runtime: HistoryRuntime, kit: Any, org: str = "acme") -> None:
    """40 windows of chatter (one per channel), then the org's index built."""
    kit.swept(
        runtime,
        org,
        [
            kit.message(f"c{n}", 0, f"{CHATTER[n % len(CHATTER)]} {n}", channel=f"C{n}")
            for n in range(40)
        ],
    )
    semantic(runtime, org)
    built = runtime.window_indexes.build_next()
    assert built is not None and built.org_id == org


def add(runtime: HistoryRuntime, kit: Any, event_id: str, text: str, org: str = "acme") -> None:
    """One new window (a channel of its own), swept."""
    runtime.service.ingest(org, [kit.message(event_id, 1, text, channel=f"N-{event_id}")])
    runtime.service.sweep(trigger="t")


def semantic(runtime: HistoryRuntime, org: str = "acme") -> list[Any]:
    result = runtime.service.search(org, HistoryQuery(QUERY, limit=10, min_relevance=0))
    return [
        (h.event_id, round(h.similarity or 0, 4), round(h.relevance or 0, 3))
        for h in result.hits
        if h.matched_by is MatchedBy.SEMANTIC
    ]


def pending(kit: Any, org: str = "acme") -> list[str]:
    """The event ids of the org's windows in its tail."""
    with kit.database.connection() as conn:
        rows = conn.execute(
            "SELECT source_event_ids FROM dw_message_embeddings"
            " WHERE org_id = %s AND index_pending ORDER BY first_occurred_at, id",
            (org,),
        ).fetchall()
    return [e for r in rows for e in r["source_event_ids"]]


def walked(runtime: HistoryRuntime, kit: Any, *, with_tail: bool) -> set[str]:
    """The event ids of the index path's statement's answer, the planner made to walk the
    indexes (a table this small is cheaper to scan), with or without the tails' scans."""
    vector = runtime.model.embed_query(QUERY)
    with pytest.MonkeyPatch.context() as patch:
        # 40 windows fit in a sample: make it small, so that the group is walked.
        patch.setattr(embeddings, "DISTRIBUTION_SAMPLE", 2)
        statement, params = indexed_statement(
            "acme", MODEL, vector, HistoryQuery(QUERY, limit=10), 10, 1024
        )
    with kit.database.connection() as conn:
        text = statement.as_string(conn)
        if not with_tail:
            text = text.replace("AND index_pending", "AND false")
        for name, value in index_path_settings(params["candidates"]).items():
            conn.execute("SELECT set_config(%s, %s, true)", (name, value))
        conn.execute("SET LOCAL enable_seqscan = off")
        conn.execute("SET LOCAL enable_sort = off")
        rows = conn.execute(text.encode(), params).fetchall()
    return {e for r in rows for e in r["source_event_ids"]}


def test_a_new_window_of_an_indexed_org_waits_in_its_tail_and_search_finds_it_exactly(
    make_runtime, kit
) -> None:
    runtime: HistoryRuntime = make_runtime(history_search_mode="approximate")
    exact: HistoryRuntime = make_runtime(history_search_mode="exact")
    seed(runtime, kit)
    assert pending(kit) == [], "windows written before the index was ready are in it"

    add(runtime, kit, "new", NEW)
    assert pending(kit) == ["new"], "the sweep wrote it outside the graph"
    expected = semantic(exact)
    assert expected[0][0] == "new"
    assert semantic(runtime) == expected
    assert "new" in walked(runtime, kit, with_tail=True)
    assert "new" not in walked(runtime, kit, with_tail=False), "the walk alone misses it"


def test_the_merge_moves_the_tail_into_the_graph_and_search_answers_alike(
    make_runtime, kit
) -> None:
    runtime: HistoryRuntime = make_runtime(history_search_mode="approximate")
    exact: HistoryRuntime = make_runtime(history_search_mode="exact")
    seed(runtime, kit)
    add(runtime, kit, "new", NEW)
    before = semantic(runtime)

    assert runtime.window_indexes.pending() == 1
    assert runtime.window_indexes.merge_pending() == 1
    assert pending(kit) == [] and runtime.window_indexes.pending() == 0
    assert runtime.window_indexes.merge_pending() == 0
    assert semantic(runtime) == before == semantic(exact)
    assert "new" in walked(runtime, kit, with_tail=False), "the walk finds it now"


def test_the_tail_is_bounded_and_past_it_the_sweep_writes_into_the_graph(
    make_runtime, kit, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embeddings, "TAIL_WINDOWS", 2)
    runtime: HistoryRuntime = make_runtime(history_search_mode="approximate")
    exact: HistoryRuntime = make_runtime(history_search_mode="exact")
    seed(runtime, kit)
    add(runtime, kit, "a", f"{NEW} a")
    add(runtime, kit, "b", f"{NEW} b")
    add(runtime, kit, "c", f"{NEW} c")
    assert pending(kit) == ["a", "b"], "the third found the tail full"
    assert semantic(runtime) == semantic(exact)
    assert "c" in walked(runtime, kit, with_tail=False)


def test_only_orgs_with_a_ready_index_get_a_tail(make_runtime, kit) -> None:
    runtime: HistoryRuntime = make_runtime(history_search_mode="approximate")
    seed(runtime, kit)
    kit.enable_semantic(runtime)
    add(runtime, kit, "other", NEW, org="globex")
    add(runtime, kit, "new", NEW)
    assert pending(kit, "globex") == [] and pending(kit) == ["new"]


def test_erased_and_purged_tail_windows_never_come_back(make_runtime, kit) -> None:
    runtime: HistoryRuntime = make_runtime(history_search_mode="approximate")
    seed(runtime, kit)
    add(runtime, kit, "new", NEW)
    add(runtime, kit, "kept", f"{NEW} kept")
    assert pending(kit) == ["kept", "new"] or pending(kit) == ["new", "kept"]
    runtime.service.erase_events("acme", event_ids=["new"], actor=TEST_ACTOR)
    assert pending(kit) == ["kept"]
    assert "new" not in {hit[0] for hit in semantic(runtime)}
    kit.clock.advance(days=40)  # past the default 30-day retention
    runtime.service.purge()
    assert pending(kit) == [] and semantic(runtime) == []
    assert runtime.window_indexes.merge_pending() == 0


def test_a_model_swap_and_dropping_the_old_model_take_its_tail(make_runtime, kit) -> None:
    old: HistoryRuntime = make_runtime(
        FakeModel("old:model", dimensions=1024), history_search_mode="approximate"
    )
    seed(old, kit)
    add(old, kit, "new", NEW)
    assert pending(kit) == ["new"]
    new: HistoryRuntime = make_runtime(history_search_mode="approximate")
    new.service.sweep(trigger="t")  # the swap's rebuild: no index of the new model yet
    with kit.database.connection() as conn:
        tails = conn.execute(
            "SELECT model, count(*) AS n FROM dw_message_embeddings"
            " WHERE index_pending GROUP BY model"
        ).fetchall()
    assert [(r["model"], r["n"]) for r in tails] == [("old:model", 1)]
    new.service.drop_model("old:model", actor=TEST_ACTOR)
    assert new.window_indexes.pending() == 0


def test_the_builder_worker_merges_the_tails(make_runtime, kit) -> None:
    runtime: HistoryRuntime = make_runtime(history_search_mode="approximate")
    seed(runtime, kit)
    add(runtime, kit, "new", NEW)
    assert pending(kit) == ["new"]
    builder = WindowIndexBuilder(runtime.window_indexes, poll_seconds=0.05, merge_poll_seconds=0.05)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(builder.run)
            with anyio.fail_after(60):
                while pending(kit):
                    await anyio.sleep(0.05)
            builder.stop.set()
            tg.cancel_scope.cancel()

    anyio.run(main)
    assert "new" in walked(runtime, kit, with_tail=False)
