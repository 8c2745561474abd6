"""`ErasureStore`: a person's events (by id, by sender) or a whole org erased with the windows
covering them, against `InMemoryErasure` over the other fakes and `PostgresErasure`
(docs/adr/0064, 0125). What the org directory, the schedule and the other stores show after
an erasure is part of the case: the fakes are wired together as the tables are."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

from tests.fakes import chat_message
from tests.integration.port_contracts.implementations import HistoryAdapters

from memory.application.history.erasure import ErasedOrg, ErasureReport
from memory.application.history.ports import DueQuery, EmbeddedWindow, OrgPageQuery, PartitionVisit
from memory.domain.embedding import EmbeddingVector
from memory.domain.history.conversation import ChatMessage, ConversationWindow, WindowClosure
from memory.domain.history.feature_flags import MODULE_FLAG, SEMANTIC_SEARCH_FLAG
from memory.domain.history.partition import Partition
from memory.domain.history.position import SweepPosition
from memory.domain.history.window_identity import window_id

T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
MODEL = "hash:8"
OTHER = "other:8"
C1 = Partition("acme", "slack", "C1")
C2 = Partition("acme", "slack", "C2")
TEAMS = Partition("acme", "teams", "C1")


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def window(partition: Partition, event_ids: list[str], model: str = MODEL) -> EmbeddedWindow:
    messages = tuple(ChatMessage(e, "ali", f"text of {e}", at(i)) for i, e in enumerate(event_ids))
    a = math.radians(len(event_ids) * 10)
    return EmbeddedWindow(
        window_id(partition, model, event_ids),
        partition,
        ConversationWindow(messages, WindowClosure.GAP),
        EmbeddingVector((math.cos(a), math.sin(a), 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)),
    )


def ingest(history: HistoryAdapters) -> None:
    history.events.append(
        "acme",
        [
            chat_message("e1", at(0)),
            chat_message("e2", at(1)),
            chat_message("e3", at(2), sender="bob"),
            chat_message("e4", at(3), sender="bob", channel_id="C2"),
            chat_message("e5", at(4), provider="teams"),
        ],
    )
    history.events.append("globex", [chat_message("e1", at(0), sender="bob")])
    written = history.windows.upsert(
        MODEL,
        [
            window(C1, ["e1", "e2"]),
            window(C1, ["e3"]),
            window(C2, ["e4"]),
            window(TEAMS, ["e5"]),
            window(Partition("globex", "slack", "C1"), ["e1"]),
        ],
    )
    assert len(written) == 5
    assert len(history.windows.upsert(OTHER, [window(C1, ["e1"], OTHER)])) == 1


def test_erasing_events_takes_the_windows_covering_them_and_nothing_of_another_org(
    history: HistoryAdapters,
) -> None:
    ingest(history)
    assert history.erasure.erase_events("acme", ["e1", "never-stored"]) == ErasureReport(1, 2)
    assert history.erasure.erase_sender("acme", "bob") == ErasureReport(2, 2)
    assert history.erasure.erase_sender("acme", "bob") == ErasureReport(0, 0)
    assert history.windows.models() == {MODEL: 2}  # acme's teams window and globex's
    assert history.erasure.erase_events("acme", ["e2", "e5"]) == ErasureReport(2, 1)
    assert history.windows.models() == {MODEL: 1}
    # The partitions stay (only an org erasure forgets them): the org ingested, and its
    # directory entry says so with no message left.
    assert history.events.org_known("acme")
    assert history.events.partitions("acme") == [C1, C2, TEAMS]
    now = datetime.now(UTC)
    (acme, globex) = history.directory.page(OrgPageQuery(None, None, None, 10, MODEL, now))
    assert (acme.org_id, acme.partitions, acme.messages) == ("acme", 3, 0)
    assert (globex.org_id, globex.messages) == ("globex", 1)


def test_erasing_an_org_removes_all_it_had_and_nothing_of_another(
    history: HistoryAdapters,
) -> None:
    ingest(history)
    history.flags.set_org("acme", SEMANTIC_SEARCH_FLAG, True)
    history.flags.set_org("acme", MODULE_FLAG, False)
    history.flags.set_org("globex", SEMANTIC_SEARCH_FLAG, True)
    history.retention.set_days("acme", 10)
    history.schedule.register(MODEL, datetime.now(UTC))
    history.directory.record_visits(
        [PartitionVisit(C1, MODEL, SweepPosition(at(2), "e3"), 2, 0, 0, False, 0, True, T0)]
    )

    erased = history.erasure.erase_org("acme")
    assert erased == ErasedOrg(5, 5, erased.partitions, erased.models, 2, True)
    assert sorted(erased.partitions) == [C1, C2, TEAMS]
    assert sorted(erased.models) == [MODEL, OTHER]

    assert not history.events.org_known("acme") and history.events.partitions("acme") == []
    assert history.events.org_known("globex")
    assert history.windows.models() == {MODEL: 1}
    assert history.flags.layers("acme").org_values == {}
    assert dict(history.flags.layers("globex").org_values) == {SEMANTIC_SEARCH_FLAG: True}
    assert history.retention.days("acme") is None
    now = datetime.now(UTC) + timedelta(minutes=1)
    assert [
        r.org_id for r in history.directory.page(OrgPageQuery(None, None, None, 10, MODEL, now))
    ] == ["globex"]
    totals = history.directory.sweep_totals("acme", MODEL)
    assert (totals.partitions, totals.messages, totals.partitions_swept) == (0, 0, 0)
    due = history.schedule.due(DueQuery(MODEL, now, 10, ()))
    assert [v.partition.org_id for v in due] == ["globex"]
    assert history.schedule.pending_windows("acme", MODEL) == 0

    assert history.erasure.erase_org("acme") == ErasedOrg(0, 0, [], [], 0, False)
