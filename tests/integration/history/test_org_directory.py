"""The org directory (GET /v1/orgs) on a real database: which orgs it knows, its pages and
prefix ranges in byte order, a key's narrowing, and the per-org figures after a sweep."""

from __future__ import annotations

from datetime import timedelta
from importlib import resources

import pytest
from tests.fakes import TEST_ACTOR

from memory.domain.errors import InvalidInput
from memory.domain.history.feature_flags import MODULE_FLAG, SEMANTIC_SEARCH_FLAG
from memory.entrypoints.history_runtime import HistoryRuntime
from memory.infrastructure.history.locks import ORG_DIRECTORY_LOCK_CLASS


def all_pages(runtime: HistoryRuntime, **kwargs) -> list[list[str]]:
    pages, cursor = [], None
    while True:
        page = runtime.service.orgs(cursor=cursor, **kwargs)
        pages.append([o.org_id for o in page.orgs])
        if page.next_cursor is None:
            return pages
        cursor = page.next_cursor


def test_every_known_org_is_listed_once_in_byte_order_a_page_at_a_time(make_runtime, kit) -> None:
    runtime = make_runtime()
    runtime.service.ingest("beta", [kit.message("b1", 0), kit.message("b2", 1, channel="C2")])
    runtime.service.ingest("Zeta", [kit.message("z1", 0)])
    runtime.service.ingest("alpha", [kit.message("a1", 0)])
    runtime.service.set_org_flag("flags-only", SEMANTIC_SEARCH_FLAG, False, actor=TEST_ACTOR)
    runtime.service.set_retention("kept-long", 400, actor=TEST_ACTOR)

    assert all_pages(runtime, limit=2) == [
        ["Zeta", "alpha"],
        ["beta", "flags-only"],
        ["kept-long"],
    ]
    orgs = {o.org_id: o for o in runtime.service.orgs().orgs}
    assert (orgs["beta"].partitions, orgs["beta"].messages) == (2, 2)
    assert (orgs["flags-only"].partitions, orgs["flags-only"].messages) == (0, 0)
    assert (orgs["kept-long"].retention_days, orgs["kept-long"].retention_default) == (400, False)
    assert (orgs["alpha"].retention_days, orgs["alpha"].retention_default) == (30, True)


def test_message_counts_stay_exact_through_duplicates_purges_and_erasure(
    make_runtime, kit, clock
) -> None:
    runtime = make_runtime(default_retention_days=30)
    runtime.service.ingest("acme", [kit.message("m1", 0), kit.message("m2", 1)])
    runtime.service.ingest("acme", [kit.message("m2", 1), kit.message("m3", 2)])  # m2 again
    runtime.service.ingest("other", [kit.message("o1", 0)])

    def messages() -> dict[str, int]:
        return {o.org_id: o.messages for o in runtime.service.orgs().orgs}

    assert messages() == {"acme": 3, "other": 1}
    runtime.service.erase_events("acme", event_ids=["m1"], actor=TEST_ACTOR)
    assert messages() == {"acme": 2, "other": 1}
    clock.advance(days=40)
    runtime.service.purge("acme")
    # Its events are past retention, but its partitions are still known: still listed.
    assert messages() == {"acme": 0, "other": 1}
    runtime.service.erase_org("acme", actor=TEST_ACTOR)
    assert messages() == {"other": 1}


def test_an_org_is_forgotten_when_its_last_flag_or_retention_goes(make_runtime) -> None:
    runtime = make_runtime()
    runtime.service.set_org_flag("x", MODULE_FLAG, True, actor=TEST_ACTOR)
    runtime.service.set_org_flag("x", SEMANTIC_SEARCH_FLAG, True, actor=TEST_ACTOR)
    runtime.service.set_retention("y", 10, actor=TEST_ACTOR)
    runtime.service.set_org_flag("x", MODULE_FLAG, None, actor=TEST_ACTOR)
    assert [o.org_id for o in runtime.service.orgs().orgs] == ["x", "y"]
    runtime.service.set_org_flag("x", SEMANTIC_SEARCH_FLAG, None, actor=TEST_ACTOR)
    runtime.service.erase_org("y", actor=TEST_ACTOR)
    assert runtime.service.orgs().orgs == []


def test_a_prefix_lists_exactly_the_orgs_that_start_with_it(make_runtime, kit) -> None:
    runtime = make_runtime()
    for org in ["ac", "acme", "acme-eu", "acme.us", "acmf", "acm", "b-acme"]:
        runtime.service.set_retention(org, 10, actor=TEST_ACTOR)
    assert all_pages(runtime, prefix="acme", limit=2) == [["acme", "acme-eu"], ["acme.us"]]
    assert all_pages(runtime, prefix="acm") == [["acm", "acme", "acme-eu", "acme.us", "acmf"]]
    assert all_pages(runtime, prefix="zzz") == [[]]


def test_a_cursor_belongs_to_its_listing_and_cannot_be_forged(make_runtime) -> None:
    runtime = make_runtime()
    for org in ["a1", "a2", "a3"]:
        runtime.service.set_retention(org, 10, actor=TEST_ACTOR)
    cursor = runtime.service.orgs(prefix="a", limit=1).next_cursor
    assert cursor is not None
    with pytest.raises(InvalidInput) as other_listing:
        runtime.service.orgs(prefix="a2", cursor=cursor)
    assert other_listing.value.field == "cursor"
    body, _, mac = cursor.partition(".")
    with pytest.raises(InvalidInput) as forged:
        runtime.service.orgs(prefix="a", cursor=body[:-2] + "xx." + mac)
    assert forged.value.field == "cursor"


def test_a_key_for_one_org_sees_that_org_only(make_runtime, kit) -> None:
    runtime = make_runtime()
    for org in ["acme", "beta", "gamma"]:
        runtime.service.ingest(org, [kit.message(f"{org}-1", 0)])
    page = runtime.service.orgs(visible=frozenset({"beta"}))
    assert [o.org_id for o in page.orgs] == ["beta"]
    assert page.next_cursor is None
    assert runtime.service.orgs(visible=frozenset({"nobody"})).orgs == []
    assert runtime.service.orgs(visible=frozenset({"beta"}), prefix="a").orgs == []


def test_after_a_sweep_the_org_shows_its_open_and_poisoned_windows_and_lag(
    make_runtime, kit, clock
) -> None:
    runtime: HistoryRuntime = make_runtime()
    kit.enable_semantic(runtime)
    now = clock()
    open_minute = (now - kit.T0 - timedelta(minutes=5)).total_seconds() / 60
    runtime.service.ingest(
        "acme",
        [
            kit.message("g1", 0, "a perfectly fine question about invoices"),
            kit.message("x1", 60, "this window makes the model choke POISON"),
            kit.message("x2", 61, "and this message is in that window too"),
            kit.message("g2", 120, "another fine question about refunds"),
            kit.message("o1", open_minute, "a conversation that is still going on"),
            kit.message("q1", 0, "a question in another channel", channel="C2"),
        ],
    )
    # A row an older version stored with an impossible instant: poison of its partition.
    with kit.database.connection() as conn:
        conn.execute(
            "INSERT INTO dw_chat_events (org_id, event_id, provider, external_channel_id,"
            " sender, event_type, decision, message_text, occurred_at) VALUES ('acme', 'bad',"
            " 'slack', 'C2', 'x', 'message', 'received', 'impossible', '9999-12-31T00:00Z')"
        )
    runtime.service.set_retention("quiet", 10, actor=TEST_ACTOR)
    before = {o.org_id: o for o in runtime.service.orgs().orgs}["acme"]
    assert (before.poison_windows, before.open_windows, before.last_swept_at) == (0, 0, None)
    # No pass has run with the model yet: it has no work state to wait in (docs/adr/0093).
    assert before.max_lag_seconds is None

    runtime.model.reject_marker = "POISON"  # type: ignore[attr-defined]
    report = runtime.service.sweep(trigger="test")
    assert (report.windows_poisoned, report.windows_open, report.events_poisoned) == (1, 1, 1)

    acme, quiet = runtime.service.orgs().orgs
    assert (acme.org_id, acme.semantic_search) == ("acme", True)
    assert (acme.semantic_search_by.layer, acme.semantic_search_by.flag) == (
        "global",
        SEMANTIC_SEARCH_FLAG,
    )
    assert (acme.partitions, acme.messages) == (2, 7)
    assert (acme.open_windows, acme.poison_windows, acme.poison_events) == (1, 1, 1)
    assert acme.last_embedded_at == now
    assert acme.last_swept_at == now
    # Only the still-open conversation waits, and it is not due before its gap elapses.
    assert acme.max_lag_seconds is None
    assert (quiet.org_id, quiet.partitions, quiet.max_lag_seconds) == ("quiet", 0, None)
    assert quiet.last_swept_at is None
    # The org's own status shows the same per partition.
    c1, c2 = runtime.service.sweep_status("acme").partitions
    assert (c1.open_windows, len(c1.poison_windows)) == (1, 1)
    assert (c2.open_windows, len(c2.poison_events)) == (0, 1)

    # A later pass that visits a partition but embeds nothing (a closed window too short
    # to embed) keeps the time of the last one that did. (A pass with nothing new visits
    # nothing at all: docs/adr/0089.)
    clock.advance(minutes=10)
    runtime.service.ingest("acme", [kit.message("k1", open_minute - 40, "ok", channel="C3")])
    clock.advance(minutes=1)
    # Work ready now has waited since its ingest, a minute ago, until a pass takes it.
    assert runtime.service.orgs().orgs[0].max_lag_seconds == pytest.approx(60)
    runtime.service.sweep(trigger="test")
    acme = runtime.service.orgs().orgs[0]
    assert (acme.last_embedded_at, acme.last_swept_at) == (now, clock())
    assert acme.open_windows == 1
    # 35 minutes after its message the conversation is closed, and embedded.
    clock.advance(minutes=20)
    runtime.service.sweep(trigger="test")
    acme = runtime.service.orgs().orgs[0]
    assert (acme.open_windows, acme.max_lag_seconds, acme.last_embedded_at) == (0, None, clock())


def test_the_org_layer_that_turns_semantic_search_off_is_named(make_runtime, kit) -> None:
    runtime = make_runtime()
    kit.enable_semantic(runtime)
    runtime.service.ingest("on", [kit.message("a", 0)])
    runtime.service.set_org_flag("off", SEMANTIC_SEARCH_FLAG, False, actor=TEST_ACTOR)
    off, on = runtime.service.orgs().orgs
    assert (off.semantic_search, off.semantic_search_by.layer) == (False, "org")
    assert (on.semantic_search, on.semantic_search_by.layer) == (True, "global")
    assert on.semantic_search_by.default is False  # the global layer was set


def test_erasure_and_dropping_a_model_remove_the_sweep_state_they_made_stale(
    make_runtime, kit
) -> None:
    runtime = make_runtime()
    kit.enable_semantic(runtime)
    runtime.service.ingest("acme", [kit.message("a", 0), kit.message("b", 0, channel="C2")])
    runtime.service.sweep(trigger="test")
    states = "SELECT count(*) FROM dw_sweep_partition_state WHERE org_id = 'acme'"
    assert kit.scalar(states) == 2
    with kit.database.connection() as conn:
        conn.execute("UPDATE dw_sweep_partition_state SET model = 'old:model'")
    runtime.service.drop_model("old:model", actor=TEST_ACTOR)
    assert kit.scalar(states) == 0
    # The next visits (partitions with new messages) write the active model's state again.
    runtime.service.ingest("acme", [kit.message("c", 1), kit.message("d", 1, channel="C2")])
    runtime.service.sweep(trigger="test")
    assert kit.scalar(states) == 2
    runtime.service.erase_org("acme", actor=TEST_ACTOR)
    assert kit.scalar(states) == 0


def test_the_migration_locks_with_the_class_the_code_names() -> None:
    migration = (
        resources.files("memory.infrastructure")
        .joinpath("migrations/0206_history_org_directory.sql")
        .read_text(encoding="utf-8")
    )
    assert f"pg_advisory_xact_lock({ORG_DIRECTORY_LOCK_CLASS}," in migration
