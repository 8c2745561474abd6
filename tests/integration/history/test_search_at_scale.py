"""Search does no per-partition work (issue 16 item 1): the SQL statements one semantic
search issues do not grow with the org's partitions."""

from __future__ import annotations

from memory.domain.history.search import HistoryQuery, SemanticState
from memory.entrypoints.history_runtime import HistoryRuntime


def statements_of_a_search(kit, runtime: HistoryRuntime, org: str, monkeypatch) -> int:
    query = HistoryQuery("a question about the order", limit=10)
    runtime.service.search(org, query)  # warm: first-use work is not the search's
    with kit.counted_statements(monkeypatch) as seen:
        result = runtime.service.search(org, query)
    assert result.semantic is SemanticState.ON and result.hits
    return len(seen)


def test_a_search_issues_as_many_statements_with_200_partitions_as_with_one(
    make_runtime, kit, monkeypatch
) -> None:
    # A long query-embedding timeout: a loaded machine must not degrade the search (a
    # degraded search issues other statements).
    runtime: HistoryRuntime = make_runtime(history_query_embed_timeout=60.0)
    kit.enable_semantic(runtime)
    for org, count in (("small", 1), ("large", 200)):
        runtime.service.ingest(
            org,
            [
                kit.message(
                    f"{org}-{c}", c % 600, f"a question about the order {c}", channel=f"C{c}"
                )
                for c in range(count)
            ],
        )
    runtime.service.sweep(trigger="t")
    # Some partitions waiting again, so pending_windows has something to count.
    runtime.service.ingest("large", [kit.message("late-1", 1000, "a question about the order")])
    runtime.service.ingest("small", [kit.message("late-1", 1000, "a question about the order")])

    small = statements_of_a_search(kit, runtime, "small", monkeypatch)
    large = statements_of_a_search(kit, runtime, "large", monkeypatch)
    # Before docs/adr/0089: 3 more per partition (watermark, read, count): 605 against 8.
    assert large == small
    # The search's state (org, flags, pending windows: one statement, docs/adr/0117), the
    # full-text query, and the KNN with the matched windows' messages (docs/adr/0155); 7
    # before ADR 0117, 4 before ADR 0155.
    assert small == 3
    assert runtime.service.search("large", HistoryQuery("order", limit=5)).pending_windows == 1
