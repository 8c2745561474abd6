"""Relevance on history's index path (issue 21 item 4, docs/adr/0134, 0138): the precision
set, embedded by the bundled e5 model into one org's windows, is searched once by the exact
scan and once through the org's own HNSW indexes, both with each script group's relevance
distribution taken from a sample smaller than the group (the set's groups hold 52-89
windows, fewer than DISTRIBUTION_SAMPLE: at that size no group would be walked at all).
The sample is the same on both paths, so a walk that finds every window of a group's top k
past its sample gives the exact scan's top 20, similarities, relevances and acceptance
figures, which must be identical; those meet the relevance rule's line (docs/adr/0112).
EXPLAIN ANALYZE shows every group's index scanned for every query, and the same check with
the walk cut short (or not taken) fails: the test can fail."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pgvector import HalfVector
from tests.conftest import migrated_database
from tests.model.conftest import LOCAL

from memory.application.embedding import EmbeddingModel
from memory.application.history.ports import WindowMatch
from memory.datasets.precision_check import PrecisionSet, load_precision_set
from memory.domain.embedding import EmbeddingVector
from memory.domain.history.search import HistoryQuery
from memory.domain.history.search_path import HistorySearchMode
from memory.domain.relevance import RelevanceFilter, ScriptGroup, script_group
from memory.domain.retrieval_precision import Judged, PrecisionTable
from memory.infrastructure.embedding.factory import ModelRegistry
from memory.infrastructure.embedding.vector_cache import CachedEmbeddingModel
from memory.infrastructure.history import embeddings
from memory.infrastructure.history.embeddings import (
    PostgresWindowEmbeddings,
    index_path_settings,
    indexed_statement,
)
from memory.infrastructure.history.search_indexes import PostgresWindowIndexes, group_index_name
from memory.infrastructure.history.search_indexes import index_name as request_name
from memory.infrastructure.postgres.database import Database
from memory.infrastructure.settings import Settings

# The precision set embedded by the bundled model (once for the run, shared with
# test_model_check.py) and searched five times.
pytestmark = [pytest.mark.model, pytest.mark.long(seconds=40)]

ORG = "acme"
# The acceptance line looks at the top 5 (`memory check`, ADR 0112); the answers are
# compared further down, as last session's one-off check did.
K = 5
COMPARED = 20
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
# Each group's sample in this test: below the smallest group (52 windows), so that most of
# every group is only reachable through its walk, and at least MIN_DISTRIBUTION (20), so
# that every group is standardised against its own sample (docs/adr/0112).
SAMPLE = 25


@pytest.fixture
def database(database_url: str) -> Iterator[Database]:
    with migrated_database(database_url, max_size=4) as database:
        yield database


@pytest.fixture
def e5(
    make_settings: Callable[..., Settings], e5_precision_vectors: Path
) -> Iterator[EmbeddingModel]:
    """The bundled model, answering the precision set's texts from the run's cache of its
    vectors (embedded once for the run, docs/adr/0162)."""
    models = ModelRegistry(make_settings(history_model=LOCAL))
    yield CachedEmbeddingModel(models.get(LOCAL), e5_precision_vectors)
    models.close()


def store_windows(database: Database, model: EmbeddingModel, data: PrecisionSet) -> None:
    """One window per document of the set, as the sweep would have written it (its own
    channel, the model's passage vector, its script group)."""
    vectors = model.embed_documents([d.text for d in data.documents])
    rows = [
        {
            "id": uuid.uuid5(uuid.NAMESPACE_URL, f"precision/{d.id}"),
            "channel": d.id,
            "model": model.identity.id,
            "embedding": HalfVector(list(v.values)),
            "content": d.text,
            "event_ids": [d.id],
            "at": T0 + timedelta(minutes=n),
            "group": script_group(d.text).value,
        }
        for n, (d, v) in enumerate(zip(data.documents, vectors, strict=True))
    ]
    with database.connection() as conn, conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO dw_message_embeddings (id, org_id, provider, external_channel_id,"
            " model, embedding, content, source_event_ids, first_occurred_at,"
            " last_occurred_at, script_group)"
            " VALUES (%(id)s, 'acme', 'slack', %(channel)s, %(model)s, %(embedding)s,"
            " %(content)s, %(event_ids)s, %(at)s, %(at)s, %(group)s)",
            rows,
        )


Queries = list[tuple[str, EmbeddingVector]]


def answers(
    windows: PostgresWindowEmbeddings, model: str, queries: Queries
) -> list[list[WindowMatch]]:
    return [
        windows.nearest(ORG, model, vector, HistoryQuery(text, limit=COMPARED), COMPARED)
        for text, vector in queries
    ]


def walked(database: Database, model: str, queries: Queries) -> list[dict[ScriptGroup, int]]:
    """Per query, the rows each script group's index scan returned when the index path's
    statement ran (EXPLAIN ANALYZE under the path's own settings; 0 when the scan was never
    executed: a group that fits in its sample is not walked)."""
    names = {group_index_name(request_name(ORG, model), g): g for g in ScriptGroup}
    out = []
    for text, vector in queries:
        statement, params = indexed_statement(
            ORG, model, vector, HistoryQuery(text, limit=COMPARED), COMPARED, 384
        )
        settings = index_path_settings(params["candidates"])
        with database.connection() as conn:
            for name, value in settings.items():
                conn.execute("SELECT set_config(%s, %s, true)", (name, value))
            row = conn.execute(
                b"EXPLAIN (ANALYZE, FORMAT JSON) " + statement.as_bytes(conn), params
            ).fetchone()
        assert row is not None
        rows = dict.fromkeys(ScriptGroup, 0)
        seen = set()
        stack = [row["QUERY PLAN"][0]["Plan"]]
        while stack:
            node = stack.pop()
            stack.extend(node.get("Plans", []))
            group = names.get(node.get("Index Name", ""))
            if group is not None:
                seen.add(group)
                rows[group] += int(node["Actual Rows"] * node["Actual Loops"])
        assert seen == set(ScriptGroup), f"not every group's index is in the plan: {seen}"
        out.append(rows)
    return out


def table(data: PrecisionSet, found: list[list[WindowMatch]]) -> PrecisionTable:
    """`memory check`'s acceptance table (by relevance, the service's default rule) from
    what the database answered: each query's top K by relevance that the rule keeps."""
    rule = RelevanceFilter()
    judged = []
    for query, matches in zip(data.queries, found, strict=True):
        top = matches[:K]
        kept = rule.keep([m.relevance for m in top])
        ids = [m.event_ids[0] for m, keep in zip(top, kept, strict=True) if keep]
        judged.append(
            Judged(
                query.lang,
                {a: data.language_of(a) for a in query.answers},
                [(i, data.language_of(i)) for i in ids],
            )
        )
    return PrecisionTable.of(judged, K)


def figures(t: PrecisionTable) -> dict[str, Any]:
    return {
        "recall": round(t.recall, 6),
        "off_topic_per_query": round(t.off_topic_per_query, 6),
        "empty_share": round(t.empty_share, 6),
        "pairs": [(p.pair, p.recall, p.off_topic_per_query) for p in t.pairs],
        "languages": [(g.lang, g.empty_share) for g in t.languages],
    }


def ranked(found: list[list[WindowMatch]]) -> list[list[tuple[str, float, float | None]]]:
    return [
        [
            (
                m.event_ids[0],
                round(m.similarity, 4),
                None if m.relevance is None else round(m.relevance, 3),
            )
            for m in matches
        ]
        for matches in found
    ]


# Embedding the set (202 documents, 230 queries; once for the run) takes a minute of CPU.
@pytest.mark.timeout(1500)
def test_the_index_path_walks_every_group_and_gives_the_exact_scans_answers_and_figures(
    database: Database, e5: EmbeddingModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 202 windows are cheaper to scan and sort than to walk: without these the planner would
    # answer the index path's statement from the table, and the test would not walk the
    # graph. They are the index path's own (its statements and their EXPLAIN ANALYZE in
    # `walked`), not the exact path's. The disabled plans' cost would also have PostgreSQL
    # compile the statement (JIT, 2-3 s a search against a millisecond's execution), hence
    # `jit` off.
    for setting in ("enable_seqscan", "enable_bitmapscan", "enable_sort", "jit"):
        monkeypatch.setitem(embeddings.INDEX_PATH_SETTINGS, setting, "off")
    data = load_precision_set()
    store_windows(database, e5, data)
    model = e5.identity.id
    queries = [(q.text, e5.embed_query(q.text)) for q in data.queries]
    indexes = PostgresWindowIndexes(database)
    exact = PostgresWindowEmbeddings(database, mode=HistorySearchMode.EXACT, indexes=indexes)
    indexed = PostgresWindowEmbeddings(
        database, mode=HistorySearchMode.APPROXIMATE, indexes=indexes
    )
    # The first approximate search asks for the org's index (it answered exactly: every
    # group fits in the service's own sample).
    indexed.nearest(ORG, model, queries[0][1], HistoryQuery("x", limit=1), 1)
    built = indexes.build_next()
    assert built is not None and (built.org_id, built.dimensions) == (ORG, 384)
    assert indexes.ready_dimensions(ORG, model) == 384
    # At the service's sample size no group is walked: the check below sees it.
    assert all(set(w.values()) == {0} for w in walked(database, model, queries[:3]))

    monkeypatch.setattr(embeddings, "DISTRIBUTION_SAMPLE", SAMPLE)
    # The set's queries are not filtered; this keeps any future filtered one on the walk.
    monkeypatch.setattr(embeddings, "EXACT_FILTERED_WINDOWS", 0)
    by_scan = answers(exact, model, queries)
    by_index = answers(indexed, model, queries)
    for n, rows in enumerate(walked(database, model, queries)):
        assert all(r > 0 for r in rows.values()), (data.queries[n].text, rows)

    assert ranked(by_index) == ranked(by_scan)
    scan_table, index_table = table(data, by_scan), table(data, by_index)
    assert figures(index_table) == figures(scan_table)
    # Issue 18's acceptance line (as tests/model/test_model_check.py holds `memory check`
    # to it): off-topic hits per query <= 1.5 and at least half of the no-answer queries
    # answered with no semantic hit. It is held at the service's sample size (where this
    # org's groups are their own samples); a 25-window sample estimates each distribution
    # too coarsely for it (off-topic 1.72 per query, measured), on both paths alike.
    with monkeypatch.context() as service:
        service.setattr(embeddings, "DISTRIBUTION_SAMPLE", 500)
        line = table(data, answers(indexed, model, queries))
    assert line.off_topic_per_query <= 1.5
    assert line.empty_share >= 0.5

    # The comparison can fail: a walk cut short (a candidate list of one, no iterative
    # scan) misses windows of some group's top 20 that only the walk can reach.
    monkeypatch.setitem(embeddings.INDEX_PATH_SETTINGS, "hnsw.ef_search", "1")
    monkeypatch.setitem(embeddings.INDEX_PATH_SETTINGS, "hnsw.iterative_scan", "off")
    assert ranked(answers(indexed, model, queries)) != ranked(by_scan)
