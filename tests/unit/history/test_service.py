"""The history use cases through `HistoryService`, over the in-memory ports (tests/fakes.py):
the sweep, search, flags, retention and model drops, without a database."""

from __future__ import annotations

import concurrent.futures
import threading
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from tests.fakes import (
    TEST_ACTOR,
    FakeClock,
    FakeModel,
    InMemoryAuditTrail,
    InMemoryHistory,
    chat_message,
)

from memory.application.history.service import HistoryService
from memory.application.observer import ServiceCall
from memory.domain.active_model import ActiveModelDrop
from memory.domain.errors import InvalidInput, NotFound
from memory.domain.history.feature_flags import MODULE_FLAG, SEMANTIC_SEARCH_FLAG, GlobalState
from memory.domain.history.partition import Partition
from memory.domain.history.search import HistoryQuery, MatchedBy, SemanticState
from memory.domain.policy.cursor import CursorCodec

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
TALK = "could you help me reset my password please"
PARTITION = Partition("acme", "slack", "C1")
CURSOR_KEY = b"k" * 32
ERASURE_KEY = b"e" * 32


class Calls:
    def __init__(self) -> None:
        self.seen: list[ServiceCall] = []

    def observe(self, call: ServiceCall) -> None:
        self.seen.append(call)


@pytest.fixture
def history() -> InMemoryHistory:
    return InMemoryHistory.create()


@pytest.fixture
def model() -> FakeModel:
    return FakeModel(dimensions=1024)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0 + timedelta(days=1))


@pytest.fixture
def calls() -> Calls:
    return Calls()


@pytest.fixture
def audit() -> InMemoryAuditTrail:
    return InMemoryAuditTrail()


@pytest.fixture
def service(
    history: InMemoryHistory,
    model: FakeModel,
    clock: FakeClock,
    calls: Calls,
    audit: InMemoryAuditTrail,
):
    svc = HistoryService(
        history.ports(),
        model,
        clock=clock,
        query_embed_timeout=2.0,
        default_retention_days=30,
        stored_model_id=lambda spec: spec.strip().removesuffix(":latest"),
        audit=audit,
        cursors=CursorCodec(CURSOR_KEY),
        erasure_key=ERASURE_KEY,
        observers=(calls,),
    )
    yield svc
    svc.close()


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def conversations(count: int, *, gap_minutes: float = 60, org_text: str = TALK) -> list:
    """`count` closed conversations of two messages each, `gap_minutes` apart."""
    return [
        chat_message(f"c{i}-{j}", at(i * gap_minutes + j), f"{org_text} {i}")
        for i in range(count)
        for j in range(2)
    ]


def on(service: HistoryService) -> None:
    service.set_global_flag(SEMANTIC_SEARCH_FLAG, True, actor=TEST_ACTOR)


# The sweep ---------------------------------------------------------------------------------


def test_closed_windows_are_embedded_once(
    service: HistoryService, history: InMemoryHistory, model: FakeModel
) -> None:
    on(service)
    service.ingest("acme", conversations(3))
    first = service.sweep(trigger="test")
    again = service.sweep(trigger="test")
    assert (first.windows_embedded, again.windows_embedded) == (3, 0)
    assert len(model.document_calls) == 1 and len(model.documents) == 3
    assert history.windows.models() == {"hash:1024": 3}
    mark = history.watermarks.get(PARTITION, "hash:1024").mark
    assert mark.position is not None and mark.position.event_id == "c2-1"


def test_a_window_still_open_waits_for_a_later_pass(
    service: HistoryService, clock: FakeClock
) -> None:
    on(service)
    clock.now = at(10)  # the conversation's last message was 9 minutes ago
    service.ingest("acme", conversations(1))
    assert service.sweep().windows_open == 1
    clock.advance(minutes=31)
    assert service.sweep().windows_embedded == 1


def test_a_transient_model_failure_stalls_without_moving_the_watermark(
    service: HistoryService, history: InMemoryHistory, model: FakeModel
) -> None:
    on(service)
    service.ingest("acme", conversations(2))
    model.down = True
    stalled = service.sweep()
    assert (stalled.partitions_stalled, stalled.windows_embedded) == (1, 0)
    watermark = history.watermarks.get(PARTITION, "hash:1024")
    assert watermark.mark.position is None and watermark.is_stalled
    assert history.windows.models() == {}
    model.down = False
    assert service.sweep().windows_embedded == 2  # retried, nothing lost


def test_a_window_the_model_rejects_is_skipped_as_poison_once(
    service: HistoryService, history: InMemoryHistory, model: FakeModel
) -> None:
    on(service)
    service.ingest("acme", conversations(3))
    model.reject_marker = f"{TALK} 1"
    report = service.sweep()
    assert (report.windows_embedded, report.windows_poisoned) == (2, 1)
    (poison,) = history.watermarks.get(PARTITION, "hash:1024").poison_windows
    assert poison.message_count == 2 and poison.reason == "input_rejected"
    calls_before = len(model.document_calls)
    assert service.sweep().windows_poisoned == 0  # never retried
    assert len(model.document_calls) == calls_before


def test_the_sweep_visits_only_orgs_with_semantic_search_on(
    service: HistoryService, history: InMemoryHistory
) -> None:
    service.ingest("acme", conversations(1))
    service.ingest("globex", conversations(1))
    assert service.sweep().partitions == 0  # dark launch: the global flag is off
    on(service)
    service.set_org_flag("globex", SEMANTIC_SEARCH_FLAG, False, actor=TEST_ACTOR)
    report = service.sweep()
    assert (report.partitions, report.windows_embedded) == (1, 1)
    assert {p.org_id for p in history.events.partitions()} == {"acme", "globex"}


def test_a_partition_another_sweeper_holds_is_reported_busy(
    service: HistoryService, history: InMemoryHistory
) -> None:
    on(service)
    service.ingest("acme", conversations(1))
    history.locks.busy.add(PARTITION)
    report = service.sweep(wait_for_locks=False)
    assert (report.partitions_busy, report.windows_embedded) == (1, 0)
    assert history.locks.sessions == [False]


def test_stopping_ends_a_running_pass_between_batches(
    service: HistoryService, model: FakeModel
) -> None:
    on(service)
    service.ingest("acme", conversations(40, gap_minutes=31))  # more than one batch
    model.gate = threading.Event()
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        running = pool.submit(service.sweep)
        assert model.entered.wait(5)
        service.stop_sweeps()
        model.gate.set()
        report = running.result(timeout=10)
    assert 0 < report.windows_embedded < 40  # the batch in flight was finished and kept
    assert len(model.document_calls) == 1


def test_sweep_status_reports_lag_and_the_active_model(
    service: HistoryService, clock: FakeClock
) -> None:
    on(service)
    service.ingest("acme", conversations(2))
    before = service.sweep_status("acme")
    assert (before.model, before.semantic_search) == ("hash:1024", True)
    (partition,) = before.partitions
    assert partition.lag_events == 4 and partition.oldest_closed_window_age_seconds is not None
    service.sweep()
    (after,) = service.sweep_status("acme").partitions
    assert (after.lag_events, after.windows_embedded) == (0, 2)


# Search ------------------------------------------------------------------------------------


def test_full_text_hits_come_first_then_semantic_ones_without_duplicates(
    service: HistoryService,
) -> None:
    on(service)
    service.ingest(
        "acme",
        [
            chat_message("a1", at(0), "the vpn token expired again"),
            chat_message("a2", at(1), "who can renew it for me"),
            chat_message("b1", at(120), "the lunch menu for friday looks great"),
        ],
    )
    service.sweep()
    result = service.search("acme", HistoryQuery("vpn token", limit=3))
    assert result.semantic is SemanticState.ON
    assert result.hits[0].event_id == "a1" and result.hits[0].matched_by is MatchedBy.FTS
    ids = [h.event_id for h in result.hits]
    assert len(ids) == len(set(ids)) == 3  # capped at the limit, each event once
    assert {h.matched_by for h in result.hits[1:]} == {MatchedBy.SEMANTIC}


def test_a_failing_model_degrades_search_to_full_text(
    service: HistoryService, model: FakeModel
) -> None:
    on(service)
    service.ingest("acme", conversations(2))
    service.sweep()
    model.down = True
    result = service.search("acme", HistoryQuery("reset my password"))
    assert result.semantic is SemanticState.DEGRADED
    assert result.hits and {h.matched_by for h in result.hits} == {MatchedBy.FTS}


@pytest.mark.parametrize(
    ("global_semantic", "org_semantic", "module", "expected"),
    [
        (False, None, None, SemanticState.OFF),
        (True, None, None, SemanticState.ON),
        (True, False, None, SemanticState.OFF),
        (True, None, False, SemanticState.OFF),
        (False, True, None, SemanticState.OFF),
    ],
)
def test_flag_layers_decide_whether_search_is_semantic(
    service: HistoryService,
    model: FakeModel,
    global_semantic: bool,
    org_semantic: bool | None,
    module: bool | None,
    expected: SemanticState,
) -> None:
    service.ingest("acme", conversations(1))
    service.set_global_flag(SEMANTIC_SEARCH_FLAG, global_semantic, actor=TEST_ACTOR)
    service.set_org_flag("acme", SEMANTIC_SEARCH_FLAG, org_semantic, actor=TEST_ACTOR)
    service.set_org_flag("acme", MODULE_FLAG, module, actor=TEST_ACTOR)
    assert service.search("acme", HistoryQuery("password")).semantic is expected
    assert bool(model.queries) is (expected is SemanticState.ON)
    assert service.semantic_search("acme") is (expected is SemanticState.ON)


def test_an_unknown_flag_is_not_found(service: HistoryService) -> None:
    with pytest.raises(NotFound):
        service.set_global_flag("no_such_flag", True, actor=TEST_ACTOR)


def test_under_opt_in_only_the_orgs_that_opted_in_are_swept_and_searched_semantically(
    service: HistoryService, history: InMemoryHistory, model: FakeModel, audit: InMemoryAuditTrail
) -> None:
    for org in ("acme", "globex", "initech"):
        service.ingest(org, conversations(1))
    service.set_global_flag(SEMANTIC_SEARCH_FLAG, GlobalState.OPT_IN, actor=TEST_ACTOR)
    service.set_org_flag("acme", SEMANTIC_SEARCH_FLAG, True, actor=TEST_ACTOR)
    service.set_org_flag("globex", SEMANTIC_SEARCH_FLAG, False, actor=TEST_ACTOR)
    assert service.sweep().windows_embedded == 1  # acme's only
    assert {r.org_id for r in history.windows.rows.values()} == {"acme"}
    assert service.search("acme", HistoryQuery("password")).semantic is SemanticState.ON
    for org in ("globex", "initech", "hooli"):  # hooli: an org the service never saw
        result = service.search(org, HistoryQuery("password"))
        assert result.semantic is SemanticState.OFF
        assert service.semantic_search(org) is False
    off_by = service.search("initech", HistoryQuery("password")).semantic_off_by
    assert off_by is not None and (off_by.layer, off_by.default) == ("org", True)
    flag = service.global_flag(SEMANTIC_SEARCH_FLAG)
    assert (flag.state, flag.enabled, flag.is_set) == (GlobalState.OPT_IN, True, True)
    org_flag = service.org_flag("initech", SEMANTIC_SEARCH_FLAG)
    assert (org_flag.global_state, org_flag.org_override, org_flag.effective) == (
        GlobalState.OPT_IN,
        None,
        False,
    )
    # Back to on: every org that did not opt out follows; the audit log names each state.
    service.set_global_flag(SEMANTIC_SEARCH_FLAG, True, actor=TEST_ACTOR)
    assert service.semantic_search("initech") and not service.semantic_search("globex")
    flags = [e for e in audit.recorded if e.action == "feature_flag.global.set"]
    assert [(e.before, e.after) for e in flags] == [(None, "opt_in"), ("opt_in", True)]


# Retention and models ----------------------------------------------------------------------


def test_purge_deletes_events_past_retention_and_their_embeddings(
    service: HistoryService, history: InMemoryHistory, clock: FakeClock
) -> None:
    on(service)
    clock.now = at(60 * 24 * 11)
    service.ingest("acme", conversations(2, gap_minutes=60 * 24 * 10))  # day 0 and day 10
    assert service.sweep().windows_embedded == 2
    clock.now = at(60 * 24 * 12)
    service.set_retention("acme", 5, actor=TEST_ACTOR)
    report = service.purge()
    assert (report.orgs, report.events_deleted, report.embeddings_deleted) == (1, 2, 1)
    assert history.windows.models() == {"hash:1024": 1}
    remaining = {h.event_id for h in service.search("acme", HistoryQuery(TALK)).hits}
    assert remaining == {"c1-0", "c1-1"}  # no purged message comes back, by either half


def test_retention_outside_its_range_changes_nothing(service: HistoryService) -> None:
    with pytest.raises(InvalidInput) as raised:
        service.set_retention("acme", 0, actor=TEST_ACTOR)
    assert raised.value.field == "days"
    assert service.retention("acme").is_default


def test_drop_model_refuses_the_active_model_and_resets_another(
    service: HistoryService, history: InMemoryHistory, clock: FakeClock
) -> None:
    on(service)
    service.ingest("acme", conversations(2))
    service.sweep()
    with pytest.raises(ActiveModelDrop):
        service.drop_model("hash:1024", actor=TEST_ACTOR)
    other = HistoryService(
        history.ports(),
        FakeModel("ollama:bge-m3", dimensions=1024),
        clock=clock,
        query_embed_timeout=2.0,
        default_retention_days=30,
        audit=InMemoryAuditTrail(),
        cursors=CursorCodec(CURSOR_KEY),
        erasure_key=ERASURE_KEY,
    )
    try:
        assert other.sweep().windows_embedded == 2
    finally:
        other.close()
    dropped = service.drop_model("ollama:bge-m3:latest", actor=TEST_ACTOR)
    assert (dropped.model, dropped.rows_deleted, dropped.watermarks_reset) == (
        "ollama:bge-m3",
        2,
        1,
    )
    assert history.windows.models() == {"hash:1024": 2}
    assert history.watermarks.get(PARTITION, "ollama:bge-m3").mark.position is None


def test_every_call_is_observed_with_its_labels(service: HistoryService, calls: Calls) -> None:
    service.ingest("acme", conversations(1))
    service.sweep("acme", trigger="cli")
    with pytest.raises(InvalidInput):
        service.set_retention("acme", -1, actor=TEST_ACTOR)
    assert [(c.operation, c.ok) for c in calls.seen] == [
        ("ingest", True),
        ("sweep", True),
        ("set_retention", False),
    ]
    assert calls.seen[1].labels == {"trigger": "cli", "org_id": "acme"}


@pytest.mark.parametrize(
    ("field", "change"),
    [
        ("events.0.sender", {"sender": " "}),
        ("events.0.channel_id", {"channel_id": "C\n1"}),
        ("events.0.provider", {"provider": "Slack!"}),
        ("events.0.decision", {"decision": "Denied"}),
        ("events.0.text", {"text": "x" * 32_001}),
        ("events.0.event_id", {"event_id": ""}),
    ],
)
def test_in_process_ingest_keeps_the_http_rules_and_stores_nothing(
    service: HistoryService, history: InMemoryHistory, field: str, change: dict[str, str]
) -> None:
    with pytest.raises(InvalidInput) as raised:
        service.ingest(
            "acme", [chat_message("ok", at(0)), replace(chat_message("b", at(1)), **change)]
        )
    assert raised.value.field == field.replace("events.0", "events.1")
    assert history.events.rows == []


def test_an_org_id_is_checked_at_every_door(service: HistoryService) -> None:
    for call in (
        lambda: service.ingest("", conversations(1)),
        lambda: service.search("a b", HistoryQuery("x")),
        lambda: service.set_retention("../acme", 7, actor=TEST_ACTOR),
        lambda: service.sweep("acme\n"),
    ):
        with pytest.raises(InvalidInput) as raised:
            call()
        assert raised.value.field == "org_id"


def test_administrative_changes_are_recorded_with_who_and_refused_ones_are_not(
    service: HistoryService, audit: InMemoryAuditTrail
) -> None:
    service.ingest("acme", conversations(2))
    service.set_global_flag(SEMANTIC_SEARCH_FLAG, True, actor=TEST_ACTOR)
    service.set_org_flag("acme", SEMANTIC_SEARCH_FLAG, False, actor=TEST_ACTOR)
    service.set_retention("acme", 5, actor=TEST_ACTOR)
    service.sweep("acme", actor=TEST_ACTOR)
    service.sweep("acme")  # the background schedule: not an administrative change
    service.purge("acme", actor=TEST_ACTOR)
    service.purge()
    with pytest.raises(InvalidInput):
        service.set_retention("acme", 0, actor=TEST_ACTOR)
    with pytest.raises(NotFound):
        service.set_global_flag("no_such_flag", True, actor=TEST_ACTOR)
    assert audit.actions() == [
        "feature_flag.global.set",
        "feature_flag.org.set",
        "retention.set",
        "sweep.triggered",
        "purge.run",
    ]
    assert {e.actor for e in audit.recorded} == {TEST_ACTOR}
    flag, org_flag, retention = audit.recorded[:3]
    assert (flag.before, flag.after) == (None, True)
    assert (org_flag.org_id, org_flag.before, org_flag.after) == ("acme", None, False)
    assert retention.before == {"days": 30, "default": True}
    assert retention.after == {"days": 5, "default": False}
