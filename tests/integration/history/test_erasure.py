"""Erasure: a person's events (by id, by sender) and a whole org, with the retention purge's
guarantees (one transaction; a sweep embedding meanwhile writes nothing erased)."""

from __future__ import annotations

import threading
import time

import pytest
from tests.fakes import TEST_ACTOR

from memory.domain.errors import InvalidInput
from memory.domain.history.feature_flags import SEMANTIC_SEARCH_FLAG
from memory.domain.history.partition import Partition
from memory.entrypoints.history_runtime import HistoryRuntime


def two_conversations(runtime: HistoryRuntime, kit, org: str = "acme") -> None:
    runtime.service.ingest(
        org,
        [
            kit.message("a1", 0, sender="ali"),
            kit.message("a2", 1, "and my email changed as well, sorry", sender="bob"),
            kit.message("b1", 100, "the printer on floor two is jammed again", sender="bob"),
            kit.message("b2", 101, "please send someone to look at it today", sender="cat"),
        ],
    )


def test_erasing_event_ids_removes_them_and_every_window_covering_one(make_runtime, kit) -> None:
    runtime: HistoryRuntime = make_runtime()
    kit.enable_semantic(runtime)
    two_conversations(runtime, kit)
    two_conversations(runtime, kit, "globex")
    runtime.service.sweep(trigger="t")
    assert len(kit.rows()) == 4

    report = runtime.service.erase_events("acme", event_ids=["a1", "a1", "missing"])
    assert (report.events_deleted, report.windows_deleted) == (1, 1)
    remaining = kit.scalar(
        "SELECT array_agg(event_id ORDER BY event_id) FROM dw_chat_events WHERE org_id = 'acme'"
    )
    assert remaining == ["a2", "b1", "b2"]
    acme = [r for r in kit.rows() if r["org_id"] == "acme"]
    assert [r["source_event_ids"] for r in acme] == [["b1", "b2"]]
    assert len([r for r in kit.rows() if r["org_id"] == "globex"]) == 2  # other orgs untouched


def test_erasing_a_sender_removes_their_events_and_the_windows_covering_them(
    make_runtime, kit
) -> None:
    runtime: HistoryRuntime = make_runtime()
    kit.enable_semantic(runtime)
    two_conversations(runtime, kit)
    runtime.service.sweep(trigger="t")

    report = runtime.service.erase_events("acme", sender="bob")
    assert (report.events_deleted, report.windows_deleted) == (2, 2)
    assert kit.scalar("SELECT count(*) FROM dw_chat_events WHERE sender = 'bob'") == 0
    assert kit.rows() == []
    assert runtime.service.erase_events("acme", sender="bob").events_deleted == 0


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({}, "body"),
        ({"event_ids": ["a1"], "sender": "bob"}, "body"),
        ({"event_ids": []}, "event_ids"),
        ({"event_ids": ["a1", ""]}, "event_ids.1"),
        ({"sender": "  "}, "sender"),
    ],
)
def test_an_erasure_request_that_breaks_a_rule_erases_nothing(
    make_runtime, kit, kwargs, field
) -> None:
    runtime: HistoryRuntime = make_runtime()
    two_conversations(runtime, kit)
    with pytest.raises(InvalidInput) as err:
        runtime.service.erase_events("acme", **kwargs)
    assert err.value.field == field
    assert kit.scalar("SELECT count(*) FROM dw_chat_events") == 4


def test_a_window_embedded_during_an_erasure_is_not_written(make_runtime, kit) -> None:
    runtime: HistoryRuntime = make_runtime()
    kit.enable_semantic(runtime)
    two_conversations(runtime, kit)
    edge = runtime.model
    edge.gate = threading.Event()  # type: ignore[attr-defined]
    sweeping = threading.Thread(target=lambda: runtime.service.sweep(trigger="t"))
    sweeping.start()
    assert edge.entered.wait(10)  # type: ignore[attr-defined]
    report = runtime.service.erase_events("acme", event_ids=["a2"])  # while its window is embedded
    assert (report.events_deleted, report.windows_deleted) == (1, 0)
    edge.gate.set()  # type: ignore[attr-defined]
    sweeping.join(20)
    assert "a2" not in kit.covered()
    assert "a1" not in kit.covered()  # the window it was cut with went with it


def test_erasing_an_org_removes_everything_and_closes_its_watermarks(make_runtime, kit) -> None:
    runtime: HistoryRuntime = make_runtime()
    kit.enable_semantic(runtime)
    two_conversations(runtime, kit)
    two_conversations(runtime, kit, "globex")
    runtime.service.set_org_flag("acme", SEMANTIC_SEARCH_FLAG, True, actor=TEST_ACTOR)
    runtime.service.set_retention("acme", 90, actor=TEST_ACTOR)
    runtime.service.sweep(trigger="t")

    report = runtime.service.erase_org("acme")
    assert (report.events_deleted, report.windows_deleted, report.partitions_deleted) == (4, 2, 1)
    assert (report.watermarks_closed, report.flags_deleted, report.retention_deleted) == (
        1,
        1,
        True,
    )
    for table in ("dw_chat_events", "dw_message_embeddings", "dw_chat_partitions"):
        assert kit.scalar(f"SELECT count(*) FROM {table} WHERE org_id = 'acme'") == 0, table
        assert kit.scalar(f"SELECT count(*) FROM {table} WHERE org_id = 'globex'") > 0, table
    assert runtime.flag_store.layers("acme").org_values == {}
    assert runtime.service.retention("acme").is_default
    watermark = runtime.watermarks.find(Partition("acme", "slack", "C1"), runtime.service.model_id)
    assert watermark is not None and watermark.closed and watermark.mark.position is None

    runtime.service.sweep(trigger="t")  # a later sweep recreates nothing
    assert kit.scalar("SELECT count(*) FROM dw_message_embeddings WHERE org_id = 'acme'") == 0
    assert runtime.service.erase_org("acme").watermarks_closed == 0  # already closed

    two_conversations(runtime, kit)  # the org starts again from nothing
    runtime.service.sweep(trigger="t")
    assert kit.scalar("SELECT count(*) FROM dw_message_embeddings WHERE org_id = 'acme'") == 2


def test_a_sweep_in_flight_when_its_org_is_erased_writes_nothing(make_runtime, kit) -> None:
    runtime: HistoryRuntime = make_runtime()
    kit.enable_semantic(runtime)
    two_conversations(runtime, kit)
    edge = runtime.model
    edge.gate = threading.Event()  # type: ignore[attr-defined]
    sweeping = threading.Thread(target=lambda: runtime.service.sweep(trigger="t"))
    sweeping.start()
    assert edge.entered.wait(10)  # type: ignore[attr-defined]
    erasing = threading.Thread(target=lambda: runtime.service.erase_org("acme"))
    erasing.start()
    deadline = time.monotonic() + 10
    while kit.scalar("SELECT count(*) FROM dw_chat_events") and time.monotonic() < deadline:
        time.sleep(0.02)
    edge.gate.set()  # type: ignore[attr-defined]
    sweeping.join(20)
    erasing.join(20)
    assert kit.rows() == []
    watermark = runtime.watermarks.find(Partition("acme", "slack", "C1"), runtime.service.model_id)
    assert watermark is not None and watermark.closed  # closed after the sweep's last advance
