"""`ChatEventLog`, `WindowEmbeddings` and `RetentionStore`: the same cases against the
in-memory fakes and the PostgreSQL adapters (docs/adr/0125)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from tests.fakes import chat_message
from tests.integration.port_contracts.implementations import HistoryStores

from memory.application.history.ports import EmbeddedWindow, OutOfRangeEvent, ReindexedBatch
from memory.domain.embedding import EmbeddingVector
from memory.domain.history.conversation import ChatMessage, ConversationWindow, WindowClosure
from memory.domain.history.partition import Partition
from memory.domain.history.position import SweepPosition
from memory.domain.history.search import HistoryQuery
from memory.domain.history.sweep_plan import PartitionRead, WatermarkMark
from memory.domain.history.window_identity import window_id
from memory.domain.time_range import AcceptedTimeRange

T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
MODEL = "hash:8"
C1 = Partition("acme", "slack", "C1")
C2 = Partition("acme", "slack", "C2")


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def vector(degrees: float) -> EmbeddingVector:
    a = math.radians(degrees)
    return EmbeddingVector((math.cos(a), math.sin(a), 0.0, 0.0, 0.0, 0.0, 0.0, 0.0))


def ingest(stores: HistoryStores) -> None:
    stores.events.append(
        "acme",
        [
            chat_message("e1", at(0), "the zebra crossing is closed"),
            chat_message("e2", at(1), "use the giraffe entrance instead"),
            chat_message("e3", at(2), "zebra stripes everywhere", channel_id="C2"),
            chat_message("e4", at(3), "a zebra on teams", provider="teams"),
        ],
    )
    stores.events.append("globex", [chat_message("e1", at(0), "another zebra")])


def embedded(partition: Partition, event_ids: list[str], degrees: float) -> EmbeddedWindow:
    messages = tuple(ChatMessage(e, "ali", f"text of {e}", at(i)) for i, e in enumerate(event_ids))
    return EmbeddedWindow(
        window_id(partition, MODEL, event_ids),
        partition,
        ConversationWindow(messages, WindowClosure.GAP),
        vector(degrees),
    )


def test_an_event_id_the_org_has_is_a_duplicate(history_stores: HistoryStores) -> None:
    ingest(history_stores)
    again = history_stores.events.append(
        "acme", [chat_message("e1", at(0), "changed"), chat_message("e5", at(5))]
    )
    assert (again.event_ids, again.inserted) == (["e1", "e5"], 1)
    assert history_stores.events.org_known("acme") and history_stores.events.org_known("globex")
    assert not history_stores.events.org_known("initech")
    assert history_stores.events.partitions("acme") == [
        C1,
        C2,
        Partition("acme", "teams", "C1"),
    ]


def test_full_text_finds_the_orgs_messages_with_the_word_within_the_filters(
    history_stores: HistoryStores,
) -> None:
    ingest(history_stores)

    def found(**fields: object) -> set[str]:
        query = HistoryQuery("zebra", **fields)  # type: ignore[arg-type]
        return {h.event_id for h in history_stores.events.full_text("acme", query)}

    assert found() == {"e1", "e3", "e4"}
    assert found(provider="slack") == {"e1", "e3"}
    assert found(provider="slack", channel_id="C2") == {"e3"}
    assert found(since=at(1), until=at(3)) == {"e3"}
    hits = history_stores.events.full_text("acme", HistoryQuery("giraffe"))
    assert [(h.event_id, h.sender, h.channel_id) for h in hits] == [("e2", "ali", "C1")]


def test_windows_are_written_only_over_stored_events_and_replace_overlapping_ones(
    history_stores: HistoryStores,
) -> None:
    ingest(history_stores)
    windows = history_stores.windows
    first = embedded(C1, ["e1"], 10)
    assert windows.upsert(MODEL, [first, embedded(C1, ["e1", "missing"], 20)]) == {first.id}
    wider = embedded(C1, ["e1", "e2"], 30)
    assert windows.upsert(MODEL, [wider, embedded(C2, ["e3"], 40)]) == {
        wider.id,
        window_id(C2, MODEL, ["e3"]),
    }
    assert windows.models() == {MODEL: 2}
    matches = windows.nearest("acme", MODEL, vector(0), HistoryQuery("q"), 5)
    assert [(m.event_ids, round(m.similarity, 2)) for m in matches] == [
        (("e1", "e2"), round(math.cos(math.radians(30)), 2)),
        (("e3",), round(math.cos(math.radians(40)), 2)),
    ]
    assert [
        m.event_ids for m in windows.nearest("acme", MODEL, vector(0), HistoryQuery("q"), 1)
    ] == [("e1", "e2")]
    in_c2 = windows.nearest("acme", MODEL, vector(0), HistoryQuery("q", channel_id="C2"), 5)
    assert [m.event_ids for m in in_c2] == [("e3",)]
    assert windows.nearest("globex", MODEL, vector(0), HistoryQuery("q"), 5) == []
    assert windows.drop_model(MODEL) == 2
    assert windows.models() == {}


def test_retention_days_are_the_orgs_own_or_none(history_stores: HistoryStores) -> None:
    ingest(history_stores)
    retention = history_stores.retention
    assert retention.days("acme") is None
    retention.set_days("acme", 30)
    retention.set_days("acme", 45)
    assert (retention.days("acme"), retention.days("globex")) == (45, None)
    assert sorted(retention.orgs_with_events()) == ["acme", "globex"]


def test_a_purge_takes_expired_events_and_the_windows_covering_them_and_keeps_the_org(
    history_stores: HistoryStores,
) -> None:
    """Expired: before the cutoff, or outside the range ingest accepts (a row an older
    version stored, docs/adr/0041)."""
    far_future = at(60 * 24 * 400)
    stored = {"old1": at(0), "old2": at(1), "new": at(60), "future": far_future}
    history_stores.events.append(
        "acme", [chat_message(e, when, f"text of {e}") for e, when in stored.items()]
    )
    history_stores.events.append("globex", [chat_message("old1", at(0))])

    def covering(event_ids: list[str]) -> EmbeddedWindow:
        messages = tuple(ChatMessage(e, "ali", f"text of {e}", stored[e]) for e in event_ids)
        return EmbeddedWindow(
            window_id(C1, MODEL, event_ids),
            C1,
            ConversationWindow(messages, WindowClosure.GAP),
            vector(len(event_ids) * 10),
        )

    windows = [covering(["old1", "old2"]), covering(["new"]), covering(["future"])]
    assert len(history_stores.windows.upsert(MODEL, windows)) == 3
    within = AcceptedTimeRange.for_stored_rows(at(60 * 24))
    assert history_stores.retention.purge("acme", at(30), within) == (3, 2)
    left = history_stores.events.messages("acme", list(stored), HistoryQuery("q"))
    assert [h.event_id for h in left] == ["new"]
    assert history_stores.windows.models() == {MODEL: 1}
    assert history_stores.events.org_known("globex")
    # Everything purged: the org's partitions stay, and so does the org (only an erasure
    # forgets it).
    assert history_stores.retention.purge("acme", far_future, within) == (1, 1)
    assert history_stores.events.partitions("acme") == [C1]
    assert history_stores.events.org_known("acme")
    assert sorted(history_stores.retention.orgs_with_events()) == ["acme", "globex"]


def read_ids(read: PartitionRead) -> list[str]:
    return [m.event_id for m in read.messages]


def test_the_sweep_reads_the_main_stream_then_the_late_one_and_counts_what_is_left(
    history_stores: HistoryStores,
) -> None:
    events = history_stores.events
    events.append(
        "acme",
        [
            chat_message("m1", at(0)),
            chat_message("m2", at(1)),
            chat_message("m3", at(2)),
            chat_message("denied", at(1.5), decision="denied"),  # never read by the sweep
            chat_message("x1", at(0.5), channel_id="C2"),
        ],
    )
    start = WatermarkMark(None, 0)
    first = events.read_main(C1, start, 2)
    assert read_ids(first.read) == ["m1", "m2"] and not first.read.complete
    assert (first.late_pending, first.out_of_range) == (False, False)
    whole = events.read_main(C1, start, 10)
    assert read_ids(whole.read) == ["m1", "m2", "m3"] and whole.read.complete
    assert whole.horizon_seq == first.horizon_seq and events.count_unconsumed(C1, start) == 3
    assert whole.read.messages[0].text == "could you help me reset my password please"

    mark = start.after_main(SweepPosition(at(1), "m2"), first.horizon_seq)
    after = events.read_main(C1, mark, 10)
    assert read_ids(after.read) == ["m3"] and events.count_unconsumed(C1, mark) == 1
    many = events.read_main_many([(C1, mark), (C2, start)], 10)
    assert many == {C1: after, C2: events.read_main(C2, start, 10)}
    assert read_ids(many[C2].read) == ["x1"]

    # Late: ingested after the horizon, at or before the position.
    events.append("acme", [chat_message("late1", at(0.2)), chat_message("late2", at(0.7))])
    waiting = events.read_main(C1, mark, 10)
    assert waiting.late_pending and waiting.read.messages == ()
    assert waiting.horizon_seq > first.horizon_seq
    assert events.count_unconsumed(C1, mark) == 3
    catching = mark.begin_late(waiting.horizon_seq)
    assert catching.late is not None
    with pytest.raises(ValueError):
        events.read_main_many([(C1, catching)], 10)  # a catch-up reads its late stream
    one = events.read_late(C1, catching, catching.late, 1)
    assert read_ids(one) == ["late1"] and not one.complete
    moved = catching.after_late(SweepPosition(at(0.2), "late1"), caught_up=False)
    assert moved.late is not None
    rest = events.read_late(C1, moved, moved.late, 10)
    assert read_ids(rest) == ["late2"] and rest.complete
    assert events.count_unconsumed(C1, moved) == 2
    done = moved.after_late(None, caught_up=True)
    final = events.read_main(C1, done, 10)
    assert not final.late_pending and read_ids(final.read) == ["m3"]
    assert events.count_unconsumed(C1, done) == 1


def test_a_row_outside_the_accepted_range_is_never_read_or_searched_but_named(
    history_stores: HistoryStores,
) -> None:
    """A row an older version stored past what ingest accepts now (docs/adr/0041): the
    sweep skips it as poison, by the name and instant `out_of_range` gives."""
    events = history_stores.events
    far = datetime(2099, 1, 2, 3, 4, 5, 120_000, tzinfo=UTC)
    events.append(
        "acme",
        [
            chat_message("m1", at(0), "a zebra"),
            chat_message("future", far, "a zebra from the future"),
            chat_message("m2", at(1)),
        ],
    )
    start = WatermarkMark(None, 0)
    main = events.read_main(C1, start, 10)
    assert read_ids(main.read) == ["m1", "m2"] and main.out_of_range
    assert events.read_main_many([(C1, start)], 10)[C1] == main
    assert events.count_unconsumed(C1, start) == 2
    assert events.out_of_range(C1, [], 10) == [
        OutOfRangeEvent("future", "2099-01-02 03:04:05.12+00")
    ]
    assert events.out_of_range(C1, ["future"], 10) == []
    assert [h.event_id for h in events.full_text("acme", HistoryQuery("zebra"))] == ["m1"]
    assert events.messages("acme", ["future", "m2"], HistoryQuery("q"))[0].event_id == "m2"
    assert len(events.messages("acme", ["future", "m2"], HistoryQuery("q"))) == 1


def test_rows_stored_by_the_current_segmentation_leave_nothing_to_reindex(
    history_stores: HistoryStores,
) -> None:
    """`FullTextIndex` (the same log): what ingest stores today is indexed by today's
    segmentation (docs/adr/0051); older rows are PostgreSQL's own case
    (tests/integration/history/test_full_text_cjk.py)."""
    ingest(history_stores)
    history_stores.events.append("acme", [chat_message("zh", at(9), "我们明天开会讨论退款")])
    assert history_stores.index.count_stale() == 0
    assert history_stores.index.count_stale("acme") == 0
    assert history_stores.index.reindex_batch(None, 100) == ReindexedBatch(0, None)
