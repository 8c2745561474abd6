from __future__ import annotations

import threading

import psycopg
import pytest
from tests.fakes import TEST_ACTOR

from memory.domain.errors import InvalidInput
from memory.entrypoints.history_runtime import HistoryRuntime

TALK = "could you help me reset my password please"


def minutes_ago(clock, kit, minutes: float) -> float:
    return (clock.now - kit.T0).total_seconds() / 60 - minutes


def test_purge_deletes_old_events_and_every_row_covering_one(make_runtime, kit, clock) -> None:
    runtime: HistoryRuntime = make_runtime(default_retention_days=30)
    kit.enable_semantic(runtime)
    day = 24 * 60
    old = minutes_ago(clock, kit, 31 * day)
    edge = minutes_ago(clock, kit, 30 * day + 5)  # a window straddling the cutoff
    new = minutes_ago(clock, kit, 2 * day)
    runtime.service.ingest(
        "acme",
        [
            kit.message("old1", old, TALK),
            kit.message("edge1", edge, TALK),
            kit.message("edge2", edge + 10, TALK),  # younger than the cutoff
            kit.message("new1", new, TALK),
        ],
    )
    runtime.service.ingest("globex", [kit.message("g1", old, TALK)])
    runtime.service.set_retention("globex", 60, actor=TEST_ACTOR)
    runtime.service.sweep(trigger="t")
    assert len(kit.rows()) == 4

    report = runtime.service.purge()
    assert (report.orgs, report.events_deleted, report.embeddings_deleted) == (2, 2, 2)
    assert kit.scalar("SELECT array_agg(event_id ORDER BY event_id) FROM dw_chat_events") == [
        "edge2",
        "g1",
        "new1",
    ]
    # No chunk text outlives its source: the straddling window went with edge1.
    assert sorted(r["source_event_ids"][0] for r in kit.rows()) == ["g1", "new1"]
    assert runtime.service.purge().events_deleted == 0


def test_retention_per_org(make_runtime) -> None:
    runtime: HistoryRuntime = make_runtime(default_retention_days=30)
    assert (
        runtime.service.retention("acme").days,
        runtime.service.retention("acme").is_default,
    ) == (
        30,
        True,
    )
    runtime.service.set_retention("acme", 7, actor=TEST_ACTOR)
    assert (
        runtime.service.retention("acme").days,
        runtime.service.retention("acme").is_default,
    ) == (
        7,
        False,
    )
    with pytest.raises(InvalidInput):
        runtime.service.set_retention("acme", 0, actor=TEST_ACTOR)
    assert runtime.service.retention("acme").days == 7


def test_purge_is_one_transaction(make_runtime, kit, clock, database_url: str) -> None:
    runtime: HistoryRuntime = make_runtime()
    kit.enable_semantic(runtime)
    runtime.service.ingest(
        "acme", [kit.message("old1", minutes_ago(clock, kit, 40 * 24 * 60), TALK)]
    )
    runtime.service.sweep(trigger="t")
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS"
            " $$ BEGIN RAISE EXCEPTION 'refused'; END $$"
        )
        conn.execute(
            "CREATE TRIGGER refuse BEFORE DELETE ON dw_chat_events"
            " FOR EACH ROW EXECUTE FUNCTION refuse()"
        )
    with pytest.raises(psycopg.Error):
        runtime.service.purge()
    assert len(kit.rows()) == 1  # the embedding delete was rolled back with the event delete


def test_a_window_embedded_during_a_purge_is_not_written(make_runtime, kit, clock) -> None:
    runtime: HistoryRuntime = make_runtime(default_retention_days=30)
    kit.enable_semantic(runtime)
    runtime.service.ingest(
        "acme", [kit.message("old1", minutes_ago(clock, kit, 40 * 24 * 60), TALK)]
    )
    edge = runtime.model
    edge.gate = threading.Event()  # type: ignore[attr-defined]
    sweeping = threading.Thread(target=lambda: runtime.service.sweep(trigger="t"))
    sweeping.start()
    assert edge.entered.wait(10)  # type: ignore[attr-defined]
    assert runtime.service.purge().events_deleted == 1  # while the window is being embedded
    edge.gate.set()  # type: ignore[attr-defined]
    sweeping.join(20)
    assert kit.rows() == []


def test_time_passing_is_what_makes_events_expire(make_runtime, kit, clock) -> None:
    runtime: HistoryRuntime = make_runtime(default_retention_days=1)
    runtime.service.ingest("acme", [kit.message("e", minutes_ago(clock, kit, 60), TALK)])
    assert runtime.service.purge().events_deleted == 0
    clock.advance(days=1)
    assert runtime.service.purge().events_deleted == 1
