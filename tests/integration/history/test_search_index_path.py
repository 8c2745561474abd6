"""History search's index path (docs/adr/0134): an org that a search saw pass the threshold
is asked for an index; once the builder made it, its searches walk the org's own HNSW
indexes (one per script group) with the relevance distribution from a fixed sample, and
answer as the exact scan does. Erasure, retention, a model swap and drop-model keep their
guarantees on that path."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from tests.fakes import TEST_ACTOR, FakeModel

from memory.domain.history import search_path
from memory.domain.history.search import HistoryQuery, MatchedBy
from memory.domain.relevance import ScriptGroup
from memory.entrypoints.history_runtime import HistoryRuntime
from memory.entrypoints.workers.history_indexes import WindowIndexBuilder
from memory.infrastructure.history.embeddings import indexed_statement
from memory.infrastructure.history.search_indexes import group_index_name, index_name

TOPICS = [
    "the forklift in the warehouse broke so the delivery is late today",
    "my laptop was stolen from the car, please lock my account",
    "payroll is late this month, when will salaries be paid",
    "the printer on level three jams whenever we print invoices",
    "can I carry over unused annual leave into next year",
]
CHATTER = [
    "the team lunch moved to the noodle place on Jalan Alor",
    "who took the blue stapler from the front desk yesterday",
    "remember the quarterly town hall starts at four sharp",
    "my train was late again because of signal trouble",
    "the new coffee beans in the pantry taste like chocolate",
    "please water the plants near the window this weekend",
]
HAN = ["今天中午大家一起去吃面", "周末的羽毛球比赛改到星期天", "茶水间的咖啡豆快用完了"]
# "please": no full-text hit, so the forklift window is the first semantic one.
QUERY = "forklift broke delivery late please"


def seed(runtime: HistoryRuntime, kit: Any, org: str = "acme") -> None:
    """One window per channel: topics, chatter, and 25 windows of Han chatter (the other
    script group; the hash model gives them all one similarity, so they tie)."""
    events = [kit.message(f"t{n}", 0, t, channel=f"T{n}") for n, t in enumerate(TOPICS)]
    events += [
        kit.message(f"c{n}", 0, f"{CHATTER[n % len(CHATTER)]} {n}", channel=f"C{n}")
        for n in range(40)
    ]
    events += [
        kit.message(f"h{n}", 0, f"{HAN[n % len(HAN)]}{n}", channel=f"H{n}") for n in range(25)
    ]
    kit.swept(runtime, org, events)


def semantic(runtime: HistoryRuntime, org: str = "acme", text: str = QUERY) -> list[Any]:
    result = runtime.service.search(org, HistoryQuery(text, limit=10, min_relevance=0))
    return [
        (h.event_id, round(h.similarity or 0, 4), round(h.relevance or 0, 3))
        for h in result.hits
        if h.matched_by is MatchedBy.SEMANTIC
    ]


def requests(kit: Any) -> list[dict[str, Any]]:
    with kit.database.connection() as conn:
        return conn.execute(
            "SELECT org_id, model, state, index_name FROM dw_window_indexes ORDER BY org_id, model"
        ).fetchall()


def test_a_searched_org_gets_its_index_and_then_answers_through_it_as_the_exact_scan(
    make_runtime, kit
) -> None:
    exact: HistoryRuntime = make_runtime(history_search_mode="exact")
    indexed: HistoryRuntime = make_runtime(history_search_mode="approximate")
    seed(indexed, kit)
    expected = semantic(exact)
    assert expected and expected[0][0] == "t0"
    assert requests(kit) == [], "the exact mode asks for no index"

    assert semantic(indexed) == expected, "no index yet: the exact scan answered"
    [wanted] = requests(kit)
    assert (wanted["org_id"], wanted["state"]) == ("acme", "wanted")
    assert [p.state for p in indexed.window_indexes.progress()] == ["wanted"]

    built = indexed.window_indexes.build_next()
    assert built is not None and built.dimensions == 1024
    assert [r["state"] for r in requests(kit)] == ["ready"]
    assert indexed.window_indexes.progress() == []
    assert kit.window_index_names() == kit.group_indexes("acme")

    assert semantic(indexed) == expected
    assert semantic(exact) == expected, "the exact mode ignores a ready index"


def test_each_script_group_is_searched_on_its_own_index_with_its_own_distribution(
    make_runtime, kit
) -> None:
    exact: HistoryRuntime = make_runtime(history_search_mode="exact")
    runtime: HistoryRuntime = make_runtime(history_search_mode="approximate")
    seed(runtime, kit)
    expected = {hit[0]: hit[1:] for hit in semantic(exact)}
    semantic(runtime)
    assert runtime.window_indexes.build_next() is not None
    found = {hit[0]: hit[1:] for hit in semantic(runtime)}
    assert "t0" in found and any(e.startswith("h") for e in found)
    # Tied Han windows may differ; every window both answer has the same relevance.
    assert {e: found[e] for e in found if e in expected} == {
        e: expected[e] for e in found if e in expected
    }
    vector = runtime.model.embed_query(QUERY)
    statement, params = indexed_statement(
        "acme", "hash:1024", vector, HistoryQuery(QUERY, limit=10), 10, 1024
    )
    with kit.database.connection() as conn:
        # A table this small is cheaper to scan; the point is that the index matches.
        conn.execute("SET LOCAL enable_seqscan = off")
        conn.execute("SET LOCAL enable_sort = off")
        plan = "\n".join(
            str(r["QUERY PLAN"])
            for r in conn.execute(b"EXPLAIN " + statement.as_bytes(conn), params).fetchall()
        )
    for name in kit.group_indexes("acme"):
        assert f"Index Scan using {name}" in plan


def test_auto_mode_asks_for_an_index_only_past_the_threshold(
    make_runtime, kit, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime: HistoryRuntime = make_runtime(history_search_mode="auto")
    seed(runtime, kit)
    semantic(runtime)
    assert requests(kit) == [], "70 windows are below the threshold"
    monkeypatch.setattr(search_path, "INDEX_THRESHOLD_WINDOWS", 70)
    semantic(runtime)
    assert [(r["org_id"], r["state"]) for r in requests(kit)] == [("acme", "wanted")]


def test_erased_windows_never_come_back_through_the_index(make_runtime, kit) -> None:
    runtime: HistoryRuntime = make_runtime(history_search_mode="approximate")
    seed(runtime, kit)
    semantic(runtime)
    assert runtime.window_indexes.build_next() is not None
    assert semantic(runtime)[0][0] == "t0"
    runtime.service.erase_events("acme", event_ids=["t0"], actor=TEST_ACTOR)
    assert "t0" not in {hit[0] for hit in semantic(runtime)}


def test_purged_windows_never_come_back_through_the_index(make_runtime, kit) -> None:
    runtime: HistoryRuntime = make_runtime(history_search_mode="approximate")
    seed(runtime, kit)
    semantic(runtime)
    assert runtime.window_indexes.build_next() is not None
    kit.clock.advance(days=40)  # past the default 30-day retention
    runtime.service.purge()
    assert semantic(runtime) == []


def test_erasing_the_org_drops_its_indexes(make_runtime, kit) -> None:
    runtime: HistoryRuntime = make_runtime(history_search_mode="approximate")
    seed(runtime, kit)
    seed(runtime, kit, org="globex")
    semantic(runtime)
    semantic(runtime, org="globex")
    assert runtime.window_indexes.build_next() is not None
    assert runtime.window_indexes.build_next() is not None
    runtime.service.erase_org("acme", actor=TEST_ACTOR)
    assert [r["org_id"] for r in requests(kit)] == ["globex"]
    assert kit.window_index_names() == kit.group_indexes("globex")


def test_a_new_model_searches_exactly_until_its_own_index_is_built_and_dropping_the_old_drops_its(
    make_runtime, kit
) -> None:
    old: HistoryRuntime = make_runtime(
        FakeModel("old:model", dimensions=1024), history_search_mode="approximate"
    )
    seed(old, kit)
    semantic(old)
    assert old.window_indexes.build_next() is not None

    new: HistoryRuntime = make_runtime(history_search_mode="approximate")
    new.service.sweep(trigger="t")  # the swap's rebuild: the new model's windows
    exact: HistoryRuntime = make_runtime(history_search_mode="exact")
    expected = semantic(exact)
    assert semantic(new) == expected, "the old model's index does not serve the new one"
    assert [(r["model"], r["state"]) for r in requests(kit)] == [
        ("hash:1024", "wanted"),
        ("old:model", "ready"),
    ]
    assert [(p.model, p.state) for p in new.window_indexes.progress()] == [("hash:1024", "wanted")]
    assert new.window_indexes.build_next() is not None
    assert semantic(new) == expected

    new.service.drop_model("old:model", actor=TEST_ACTOR)
    assert [(r["model"], r["state"]) for r in requests(kit)] == [("hash:1024", "ready")]
    assert kit.window_index_names() == kit.group_indexes("acme")
    assert semantic(new) == expected


def test_the_builder_worker_builds_what_searches_asked_for(make_runtime, kit) -> None:
    runtime: HistoryRuntime = make_runtime(history_search_mode="approximate")
    seed(runtime, kit)
    semantic(runtime)
    builder = WindowIndexBuilder(runtime.window_indexes, poll_seconds=0.05)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(builder.run)
            with anyio.fail_after(120):
                while [r["state"] for r in requests(kit)] != ["ready"]:
                    await anyio.sleep(0.05)
            builder.stop.set()
            tg.cancel_scope.cancel()

    anyio.run(main)
    assert kit.window_index_names() == kit.group_indexes("acme")


def test_a_build_left_half_way_by_a_dead_builder_is_built_again(make_runtime, kit) -> None:
    runtime: HistoryRuntime = make_runtime(history_search_mode="approximate")
    seed(runtime, kit)
    semantic(runtime)
    name = index_name("acme", "hash:1024")
    # What a builder that died leaves: the request marked building, no lock held, and an
    # index under the group's name that is not the finished graph.
    leftover = group_index_name(name, ScriptGroup.OTHER)
    with kit.database.connection() as conn:
        conn.execute("UPDATE dw_window_indexes SET state = 'building'")
        conn.execute(f"CREATE INDEX {leftover} ON dw_message_embeddings (created_at)")
    assert runtime.window_indexes.build_next() is not None
    assert [r["state"] for r in requests(kit)] == ["ready"]
    with kit.database.connection() as conn:
        method = conn.execute(
            "SELECT am.amname FROM pg_class c JOIN pg_am am ON am.oid = c.relam"
            " WHERE c.relname = %s",
            (leftover,),
        ).fetchone()
    assert method is not None and method["amname"] == "hnsw"
    assert semantic(runtime)[0][0] == "t0"
