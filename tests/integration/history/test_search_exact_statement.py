"""The exact path's statement (docs/adr/0150): a selection of one script group is read past
its sample without testing the group on each row, with the same answer; and the statement,
once psycopg prepares it, is planned once for its org instead of at every search.

A reference computed here from the stored vectors (numpy) says what the answer must be."""

from __future__ import annotations

import random
import uuid
from typing import Any

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector
from psycopg.rows import dict_row

from memory.domain.history.search import HistoryQuery
from memory.domain.relevance import ScriptGroup, SimilarityDistribution
from memory.entrypoints.history_runtime import HistoryRuntime
from memory.infrastructure.history import embeddings

QUERY = "forklift warehouse delivery late"
WORDS = [
    "forklift",
    "warehouse",
    "delivery",
    "late",
    "pallet",
    "truck",
    "invoice",
    "refund",
    "parcel",
    "courier",
    "stapler",
    "lunch",
    "noodle",
    "meeting",
    "budget",
    "printer",
    "laptop",
    "charger",
    "window",
    "plants",
    "coffee",
    "train",
]
SAMPLE = 20  # MIN_DISTRIBUTION: the sample gives a usable distribution
WINDOWS = 36


def seed(runtime: HistoryRuntime, kit: Any, org: str) -> None:
    """WINDOWS windows of Latin text in one channel (one script group), 35 minutes apart."""
    kit.enable_semantic(runtime)
    rng = random.Random(org)
    events = [
        kit.message(f"m{n}", 35 * n, " ".join([*rng.sample(WORDS, 5), f"w{n}"]), channel="A")
        for n in range(WINDOWS)
    ]
    runtime.service.ingest(org, events)
    runtime.service.sweep(trigger="t")


def similarities(kit: Any, org: str, query: np.ndarray) -> dict[uuid.UUID, float]:
    """Each stored window's similarity to the query."""
    with kit.database.connection() as conn:
        rows = conn.execute(
            "SELECT id, embedding::real[] AS v FROM dw_message_embeddings WHERE org_id = %s",
            (org,),
        ).fetchall()
    q = query / np.linalg.norm(query)
    return {
        r["id"]: float(np.array(r["v"], dtype=np.float64) @ q / np.linalg.norm(r["v"]))
        for r in rows
    }


def assert_ranked(found: list[Any], similarity: dict[uuid.UUID, float], k: int) -> None:
    """`found` is the k most similar windows, most similar first (windows of equal
    similarity in either order: the hash model gives many), each standardised against the
    first SAMPLE windows in id order."""
    sample = SimilarityDistribution.of([similarity[i] for i in sorted(similarity)[:SAMPLE]])
    best = sorted(similarity.values(), reverse=True)[:k]
    assert [similarity[m.window_id] for m in found] == pytest.approx(best, abs=1e-6)
    assert [m.relevance for m in found] == pytest.approx(
        [sample.standardise(similarity[m.window_id]) for m in found], abs=1e-3
    )


def scans_testing_the_group(plan: dict[str, Any]) -> int:
    """Executed scans of dw_message_embeddings whose conditions name script_group."""
    found = 0
    if plan.get("Relation Name") == "dw_message_embeddings" and plan.get("Actual Loops", 0):
        conditions = " ".join(str(plan.get(key, "")) for key in ("Filter", "Index Cond"))
        found += "script_group" in conditions
    return found + sum(scans_testing_the_group(p) for p in plan.get("Plans", []))


def test_a_one_group_selection_is_read_past_its_sample_without_testing_the_group(
    make_runtime, kit, monkeypatch: pytest.MonkeyPatch, database_url: str
) -> None:
    monkeypatch.setattr(embeddings, "DISTRIBUTION_SAMPLE", SAMPLE)
    runtime: HistoryRuntime = make_runtime(history_search_mode="exact")
    seed(runtime, kit, "acme")
    vector = runtime.model.embed_query(QUERY)
    model = runtime.model.identity.id
    query = HistoryQuery(QUERY, limit=10)
    found = runtime.windows.nearest("acme", model, vector, query, 10)
    query_vector = np.array(vector.values, dtype=np.float64)
    assert_ranked(found, similarities(kit, "acme", query_vector), 10)
    statement, params = embeddings.exact_statement("acme", model, vector, query, 10)
    with psycopg.connect(database_url, row_factory=dict_row) as conn:
        register_vector(conn)
        row = conn.execute(
            psycopg.sql.SQL("EXPLAIN (ANALYZE, FORMAT JSON) {}").format(statement), params
        ).fetchone()
    assert row is not None
    plan = row["QUERY PLAN"][0]["Plan"]
    # Each group's sample is read by its group's btree; the rest is not tested per group.
    assert scans_testing_the_group(plan) == len(ScriptGroup)


def test_the_statement_is_planned_once_for_its_org_once_prepared(
    make_runtime, kit, monkeypatch: pytest.MonkeyPatch, database_url: str
) -> None:
    monkeypatch.setattr(embeddings, "DISTRIBUTION_SAMPLE", SAMPLE)
    runtime: HistoryRuntime = make_runtime(history_search_mode="exact")
    seed(runtime, kit, "acme")
    seed(runtime, kit, "other-org")
    model = runtime.model.identity.id
    with psycopg.connect(database_url, row_factory=dict_row, autocommit=True) as conn:
        register_vector(conn)
        for n in range(12):
            for org in ("acme", "other-org"):
                text = f"{QUERY} {WORDS[n]}"
                vector = runtime.model.embed_query(text)
                statement, params = embeddings.exact_statement(
                    org, model, vector, HistoryQuery(text, limit=10), 10
                )
                conn.execute(statement, params, prepare=True).fetchall()
        prepared = conn.execute(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements"
        ).fetchall()
    # One statement per org (a generic plan never serves another org's size), each planned
    # once after PostgreSQL's five custom plans.
    assert len(prepared) == 2
    assert all(p["generic_plans"] >= 6 for p in prepared), prepared


def scans_of(plan: dict[str, Any], relation: str) -> list[tuple[str, int]]:
    """Executed scans of `relation`: (index or node type, rows found over all loops)."""
    found = []
    if plan.get("Relation Name") == relation and plan.get("Actual Loops", 0):
        how = str(plan.get("Index Name", plan["Node Type"]))
        found.append((how, int(plan["Actual Rows"] * plan["Actual Loops"])))
    return found + [s for p in plan.get("Plans", []) for s in scans_of(p, relation)]


def test_the_chosen_windows_messages_come_with_them_probed_by_key_on_a_generic_plan(
    make_runtime, kit, monkeypatch: pytest.MonkeyPatch, database_url: str
) -> None:
    """docs/adr/0155: no round trip of their own; and on the generic plan the prepared
    statement settles on (docs/adr/0150), each message is a probe of the primary key, not
    a walk of the org's rows in range (docs/adr/0117)."""
    monkeypatch.setattr(embeddings, "DISTRIBUTION_SAMPLE", SAMPLE)
    runtime: HistoryRuntime = make_runtime(history_search_mode="exact")
    # Enough of the org's messages elsewhere that walking them costs more than probing
    # the chosen windows' (the plan a 36-message org gets is not a large org's).
    for batch in range(2):
        runtime.service.ingest(
            "acme",
            [
                kit.message(f"f{n}", n - 1500, f"filler {n}", channel="F")
                for n in range(batch * 750, (batch + 1) * 750)
            ],
        )
    seed(runtime, kit, "acme")
    with kit.database.connection() as conn:
        conn.execute("ANALYZE dw_chat_events")
    vector = runtime.model.embed_query(QUERY)
    model = runtime.model.identity.id
    query = HistoryQuery(QUERY, limit=10, channel_id="A")
    found = runtime.windows.nearest("acme", model, vector, query, 10)
    assert [tuple(h.event_id for h in m.messages or ()) for m in found] == [
        m.event_ids for m in found
    ]
    statement, params = embeddings.exact_statement("acme", model, vector, query, 10)
    with psycopg.connect(database_url, row_factory=dict_row, autocommit=True) as conn:
        register_vector(conn)
        text = statement.as_string(conn)
        for n, name in enumerate(params, 1):
            text = text.replace(f"%({name})s", f"${n}")
        conn.execute(f"PREPARE knn AS {text}")
        conn.execute("SET plan_cache_mode = force_generic_plan")
        arguments = psycopg.sql.SQL(", ").join(psycopg.sql.Literal(v) for v in params.values())
        row = conn.execute(
            psycopg.sql.SQL("EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE knn({})").format(arguments)
        ).fetchone()
    assert row is not None
    plan = row["QUERY PLAN"][0]["Plan"]
    messages = sum(len(m.event_ids) for m in found)
    assert scans_of(plan, "dw_chat_events") == [("dw_chat_events_pkey", messages)]
