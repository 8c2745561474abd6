from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta

import psycopg
import pytest

from memory.domain.errors import InvalidInput
from memory.domain.history.search import HistoryQuery
from memory.entrypoints.history_runtime import HistoryRuntime
from memory.infrastructure.history.ingest_listener import INGEST_CHANNEL
from memory.infrastructure.history.locks import INGEST_LOCK_CLASS


def test_an_event_id_is_an_idempotency_key(
    make_runtime: Callable[..., HistoryRuntime], kit
) -> None:
    runtime = make_runtime()
    first = runtime.service.ingest("acme", [kit.message("a", 0, "original"), kit.message("b", 1)])
    assert (first.event_ids, first.inserted, first.duplicates) == (["a", "b"], 2, 0)
    again = runtime.service.ingest("acme", [kit.message("a", 0, "changed"), kit.message("c", 2)])
    assert (again.event_ids, again.inserted, again.duplicates) == (["a", "c"], 1, 1)
    assert kit.scalar("SELECT message_text FROM dw_chat_events WHERE event_id = 'a'") == "original"
    other_org = runtime.service.ingest("globex", [kit.message("a", 0)])
    assert other_org.inserted == 1
    assert kit.scalar("SELECT count(*) FROM dw_chat_events") == 4


def test_derived_ids_make_a_retried_request_store_nothing_new(make_runtime, kit) -> None:
    runtime = make_runtime()
    batch = [replace(kit.message("x", i, f"message {i}"), event_id=None) for i in range(3)]
    first = runtime.service.ingest("acme", batch)
    retry = runtime.service.ingest("acme", batch)
    assert first.event_ids == retry.event_ids
    assert len(set(first.event_ids)) == 3
    assert (retry.inserted, retry.duplicates) == (0, 3)


def test_repeats_within_one_request_count_as_duplicates(make_runtime, kit) -> None:
    runtime = make_runtime()
    result = runtime.service.ingest("acme", [kit.message("a", 0), kit.message("a", 0)])
    assert (result.inserted, result.duplicates) == (1, 1)


def test_a_request_needs_one_to_a_thousand_events_and_stores_nothing_otherwise(
    make_runtime, kit
) -> None:
    runtime = make_runtime()
    with pytest.raises(InvalidInput) as caught:
        runtime.service.ingest("acme", [])
    assert caught.value.field == "events"
    with pytest.raises(InvalidInput):
        runtime.service.ingest("acme", [kit.message(f"e{i}", 0) for i in range(1001)])
    assert kit.scalar("SELECT count(*) FROM dw_chat_events") == 0
    assert (
        runtime.service.ingest("acme", [kit.message(f"e{i}", 0) for i in range(1000)]).inserted
        == 1000
    )


def test_full_text_search_matches_like_plainto_tsquery_simple(make_runtime, kit) -> None:
    runtime = make_runtime()
    runtime.service.ingest(
        "acme",
        [
            kit.message("reset", 0, "please reset my password"),
            kit.message("expired", 1, "my password expired yesterday", channel="C2"),
            kit.message("lupa", 2, "saya lupa password lah", provider="whatsapp", channel="W1"),
            kit.message("zh", 3, "我忘记了密码怎么办"),
            kit.message("other", 4, "lunch at noon?"),
        ],
    )
    runtime.service.ingest("globex", [kit.message("g", 0, "password for globex")])

    def ids(**kwargs: object) -> list[str]:
        query = HistoryQuery(**kwargs)  # type: ignore[arg-type]
        return sorted(h.event_id for h in runtime.events.full_text("acme", query))

    assert ids(text="password") == ["expired", "lupa", "reset"]  # never another org's
    assert ids(text="reset password") == ["reset"]  # every word must match
    assert ids(text="passwords") == []  # 'simple': no stemming
    assert ids(text="密码") == ["zh"]  # Chinese is cut into bigrams (docs/adr/0050)
    assert ids(text="PASSWORD!", provider="whatsapp") == ["lupa"]
    assert ids(text="password", channel_id="C2") == ["expired"]
    assert ids(text="password", since=kit.at(1)) == ["expired", "lupa"]
    assert ids(text="password", until=kit.at(1)) == ["reset"]
    assert ids(text="...") == []
    limited = runtime.events.full_text("acme", HistoryQuery("password", limit=2))
    assert len(limited) == 2


def test_an_insert_notifies_the_sweep_once_per_org(make_runtime, kit, database_url: str) -> None:
    runtime = make_runtime()
    with psycopg.connect(database_url, autocommit=True) as listener:
        listener.execute(f"LISTEN {INGEST_CHANNEL}")
        runtime.service.ingest("acme", [kit.message("a", 0), kit.message("b", 1)])
        got = [n.payload for n in listener.notifies(timeout=2.0)]
        assert got == ["acme"]
        runtime.service.ingest("acme", [kit.message("a", 0)])  # only a duplicate: nothing new
        assert [n.payload for n in listener.notifies(timeout=0.5)] == []


def test_ingest_of_one_org_is_serialised_so_sequence_numbers_commit_in_order(
    make_runtime, kit, database_url: str
) -> None:
    runtime = make_runtime()
    done: list[str] = []
    with psycopg.connect(database_url) as holder:
        # Another ingest transaction of `acme` in flight.
        holder.execute("SELECT pg_advisory_xact_lock(%s, hashtext('acme'))", (INGEST_LOCK_CLASS,))
        blocked = threading.Thread(
            target=lambda: done.append(
                runtime.service.ingest("acme", [kit.message("a", 0)]).event_ids[0]
            )
        )
        blocked.start()
        runtime.service.ingest("globex", [kit.message("g", 0)])  # other orgs are not blocked
        blocked.join(0.5)
        assert done == []
        holder.commit()
    blocked.join(5)
    assert done == ["a"]


def test_ingest_sequence_grows_with_ingest_time(make_runtime, kit) -> None:
    runtime = make_runtime()
    runtime.service.ingest("acme", [kit.message("late", 0)])
    runtime.service.ingest("acme", [kit.message("early", -timedelta(days=1).total_seconds() / 60)])
    first = kit.scalar("SELECT ingest_seq FROM dw_chat_events WHERE event_id = 'late'")
    second = kit.scalar("SELECT ingest_seq FROM dw_chat_events WHERE event_id = 'early'")
    assert second > first
