"""Erasure: a person's events (by id, by sender) and a whole org, with the retention purge's
guarantees (one transaction; a sweep embedding meanwhile writes nothing erased)."""

from __future__ import annotations

import hashlib
import hmac
import threading
import time

import pytest
from tests.fakes import TEST_ACTOR

from memory.application.audit.ports import AuditEntry, AuditQuery
from memory.domain.errors import InvalidInput
from memory.domain.history.feature_flags import SEMANTIC_SEARCH_FLAG
from memory.domain.history.partition import Partition
from memory.entrypoints.history_runtime import HistoryRuntime
from memory.infrastructure.audit.audit_log import PostgresAuditTrail
from memory.infrastructure.postgres.database import Database


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

    report = runtime.service.erase_events(
        "acme", event_ids=["a1", "a1", "missing"], actor=TEST_ACTOR
    )
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

    report = runtime.service.erase_events("acme", sender="bob", actor=TEST_ACTOR)
    assert (report.events_deleted, report.windows_deleted) == (2, 2)
    assert kit.scalar("SELECT count(*) FROM dw_chat_events WHERE sender = 'bob'") == 0
    assert kit.rows() == []
    assert runtime.service.erase_events("acme", sender="bob", actor=TEST_ACTOR).events_deleted == 0


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
        runtime.service.erase_events("acme", **kwargs, actor=TEST_ACTOR)
    assert err.value.field == field
    assert kit.scalar("SELECT count(*) FROM dw_chat_events") == 4


def test_a_window_embedded_during_an_erasure_is_not_written_and_the_rest_is(
    make_runtime, kit
) -> None:
    runtime: HistoryRuntime = make_runtime()
    kit.enable_semantic(runtime)
    two_conversations(runtime, kit)
    edge = runtime.model
    edge.gate = threading.Event()  # type: ignore[attr-defined]
    sweeping = threading.Thread(target=lambda: runtime.service.sweep(trigger="t"))
    sweeping.start()
    assert edge.entered.wait(10)  # type: ignore[attr-defined]
    report = runtime.service.erase_events(
        "acme", event_ids=["a2"], actor=TEST_ACTOR
    )  # while its window is embedded
    assert (report.events_deleted, report.windows_deleted) == (1, 0)
    edge.gate.set()  # type: ignore[attr-defined]
    sweeping.join(20)
    assert "a2" not in kit.covered()
    # The window a2 was cut with was refused, not consumed: the same pass read again and
    # embedded a1 alone (before docs/adr/0092 a1 was never embedded, and lag said 0).
    assert sorted(r["source_event_ids"] for r in kit.rows()) == [["a1"], ["b1", "b2"]]
    status = runtime.service.sweep_status("acme").partitions[0]
    assert (status.windows_embedded, status.lag_events) == (2, 0)


def test_erasing_a_sender_during_a_sweep_leaves_the_others_messages_to_be_embedded(
    make_runtime, kit
) -> None:
    """Issue 16 item 6: a sender erased while the sweep embeds the org. Every message that
    was not erased is embedded by a later pass, and the counters say what the table holds."""
    runtime: HistoryRuntime = make_runtime()
    kit.enable_semantic(runtime)
    # 40 windows of two senders each, 35 minutes apart.
    runtime.service.ingest(
        "acme",
        [
            kit.message(
                f"m{i:02d}{who}", i * 35 + n, f"message {i} from {who} about the order", sender=who
            )
            for i in range(40)
            for n, who in enumerate(("eve", "sam"))
        ],
    )
    edge = runtime.model
    edge.gate = threading.Event()  # type: ignore[attr-defined]
    sweeping = threading.Thread(target=lambda: runtime.service.sweep(trigger="t"))
    sweeping.start()
    assert edge.entered.wait(10)  # type: ignore[attr-defined]
    runtime.service.erase_events("acme", sender="eve", actor=TEST_ACTOR)
    edge.gate.set()  # type: ignore[attr-defined]
    sweeping.join(30)
    assert not sweeping.is_alive()
    runtime.service.sweep(trigger="t")

    covered = kit.covered()
    assert sorted(covered) == [f"m{i:02d}sam" for i in range(40)]  # each once, none lost
    status = runtime.service.sweep_status("acme").partitions[0]
    assert (status.windows_embedded, status.lag_events) == (len(kit.rows()), 0)


def test_erasing_an_org_removes_everything_and_closes_its_watermarks(make_runtime, kit) -> None:
    runtime: HistoryRuntime = make_runtime()
    kit.enable_semantic(runtime)
    two_conversations(runtime, kit)
    two_conversations(runtime, kit, "globex")
    runtime.service.set_org_flag("acme", SEMANTIC_SEARCH_FLAG, True, actor=TEST_ACTOR)
    runtime.service.set_retention("acme", 90, actor=TEST_ACTOR)
    runtime.service.sweep(trigger="t")

    report = runtime.service.erase_org("acme", actor=TEST_ACTOR)
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
    assert (
        runtime.service.erase_org("acme", actor=TEST_ACTOR).watermarks_closed == 0
    )  # already closed

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
    erasing = threading.Thread(target=lambda: runtime.service.erase_org("acme", actor=TEST_ACTOR))
    erasing.start()
    deadline = time.monotonic() + 10
    while kit.scalar("SELECT count(*) FROM dw_chat_events") and time.monotonic() < deadline:
        time.sleep(0.02)
    edge.gate.set()  # type: ignore[attr-defined]
    sweeping.join(20)
    erasing.join(20)
    assert kit.rows() == []
    watermark = runtime.watermarks.find(Partition("acme", "slack", "C1"), runtime.service.model_id)
    # Its windows were refused (their messages were gone), so the sweep consumed nothing and
    # never advanced (docs/adr/0092); had it advanced, the close would come after it.
    assert watermark is None or (watermark.closed and watermark.mark.position is None)


def audit_entries(database: Database) -> list[AuditEntry]:
    return PostgresAuditTrail(database).entries(AuditQuery()).entries


def audit_text(database: Database) -> str:
    with database.connection() as conn:
        return str(conn.execute("SELECT state FROM auditlog_events").fetchall())


def test_erasures_are_audited_with_ids_or_a_sender_digest_and_counts_never_text(
    make_runtime, kit, database: Database
) -> None:
    runtime: HistoryRuntime = make_runtime()
    kit.enable_semantic(runtime)
    two_conversations(runtime, kit)
    two_conversations(runtime, kit, "globex")
    runtime.service.sweep(trigger="t")

    runtime.service.erase_events("acme", event_ids=["a1", "missing", "a1"], actor=TEST_ACTOR)
    runtime.service.erase_events("acme", sender="bob", actor=TEST_ACTOR)
    runtime.service.erase_org("globex", actor=TEST_ACTOR)

    org, by_sender, by_ids = audit_entries(database)[:3]
    assert (by_ids.action, by_ids.actor, by_ids.org_id, by_ids.target) == (
        "history.erased",
        TEST_ACTOR,
        "acme",
        "acme",
    )
    assert by_ids.after == {
        "by": "event_ids",
        "event_ids": ["a1", "missing"],
        "events_deleted": 1,
        "windows_deleted": 1,
    }
    # Keyed by this database's own secret (docs/adr/0100): a guessed name hashed without
    # it matches nothing in the log.
    with database.connection() as conn:
        row = conn.execute(
            "SELECT secret FROM policy_secrets WHERE name = 'erasure_reference'"
        ).fetchone()
    assert row is not None and len(bytes(row["secret"])) == 32
    key = bytes(row["secret"])
    assert by_sender.after == {
        "by": "sender",
        "sender_hmac": hmac.new(key, b"acme\x00bob", hashlib.sha256).hexdigest(),
        "events_deleted": 2,
        "windows_deleted": 1,
    }
    logged = audit_text(database)
    assert by_sender.after["sender_hmac"] in logged
    assert hashlib.sha256(b"acme\x00bob").hexdigest() not in logged
    assert (org.action, org.org_id, org.target) == ("org.erased", "globex", "globex")
    assert org.after == {
        "events_deleted": 4,
        "windows_deleted": 2,
        "partitions_deleted": 1,
        "flags_deleted": 0,
        "retention_deleted": False,
    }
    recorded = audit_text(database)
    for text in ("bob", "printer", "password", "email"):
        assert text not in recorded and text.encode().hex() not in recorded


class Injected(Exception):
    pass


@pytest.mark.parametrize(
    "erase",
    [
        lambda s: s.erase_events("acme", event_ids=["a1", "b1"], actor=TEST_ACTOR),
        lambda s: s.erase_events("acme", sender="bob", actor=TEST_ACTOR),
        lambda s: s.erase_org("acme", actor=TEST_ACTOR),
    ],
    ids=["event_ids", "sender", "org"],
)
def test_an_erasure_whose_record_fails_erases_nothing(
    make_runtime, kit, database: Database, monkeypatch: pytest.MonkeyPatch, erase
) -> None:
    runtime: HistoryRuntime = make_runtime()
    kit.enable_semantic(runtime)
    two_conversations(runtime, kit)
    runtime.service.sweep(trigger="t")
    before = len(audit_entries(database))

    def fail(*args: object) -> None:
        raise Injected

    monkeypatch.setattr(PostgresAuditTrail, "_append", fail)
    with pytest.raises(Injected):
        erase(runtime.service)
    monkeypatch.undo()
    assert kit.scalar("SELECT count(*) FROM dw_chat_events WHERE org_id = 'acme'") == 4
    assert len(kit.rows()) == 2
    assert kit.scalar("SELECT count(*) FROM dw_chat_partitions WHERE org_id = 'acme'") == 1
    assert len(audit_entries(database)) == before
    watermark = runtime.watermarks.find(Partition("acme", "slack", "C1"), runtime.service.model_id)
    assert watermark is not None and not watermark.closed


def test_a_refused_erasure_records_nothing(make_runtime, kit, database: Database) -> None:
    runtime: HistoryRuntime = make_runtime()
    before = len(audit_entries(database))
    with pytest.raises(InvalidInput):
        runtime.service.erase_events("acme", sender="  ", actor=TEST_ACTOR)
    assert len(audit_entries(database)) == before
