"""The console's last-hour trends in PostgreSQL (docs/adr/0122): what two replicas' searches
and sweep passes did is summed per org and minute in the shared store, and read back the
same by either; old minutes are forgotten by the writes themselves."""

from __future__ import annotations

from tests.fakes import FakeModel

from memory.domain.history.activity import TREND_MINUTES
from memory.domain.history.search import HistoryQuery
from memory.entrypoints.history_runtime import HistoryRuntime


def test_two_replicas_figures_add_up_in_the_shared_store(make_runtime, kit, clock) -> None:
    model = FakeModel(dimensions=1024)
    one: HistoryRuntime = make_runtime(model)
    two: HistoryRuntime = make_runtime(model)
    kit.enable_semantic(one)
    one.service.ingest("acme", [kit.message("a1", 0), kit.message("a2", 1)])
    one.service.ingest("globex", [kit.message("g1", 0, channel="C9")])
    clock.now = kit.at(90)  # the windows closed
    assert one.service.sweep(trigger="interval").windows_embedded == 2
    query = HistoryQuery(text="password")
    one.service.search("acme", query)
    two.service.search("acme", query)
    model.down = True
    two.service.search("globex", query)  # degraded: the query could not be embedded
    assert one.activity.flush() > 0 and two.activity.flush() > 0

    for runtime in (one, two):
        service = runtime.activity.last_hour()
        acme = runtime.activity.last_hour("acme")
        globex = runtime.activity.last_hour("globex")
        assert len(service.minutes) == TREND_MINUTES
        assert (service.searches, service.windows_embedded, service.degraded_share) == (3, 2, 1 / 3)
        assert service.minutes[-1].lag_age_seconds == 0.0  # nothing waits after the pass
        assert (acme.searches, acme.windows_embedded, acme.degraded_share) == (2, 1, 0.0)
        assert (globex.searches, globex.windows_embedded, globex.degraded_share) == (1, 1, 1.0)
        assert runtime.activity.last_hour("initech").searches == 0


def test_a_flush_forgets_minutes_older_than_any_trend(make_runtime, kit, clock) -> None:
    runtime: HistoryRuntime = make_runtime()
    runtime.service.search("acme", HistoryQuery(text="password"))
    runtime.activity.flush()
    assert kit.scalar("SELECT count(*) FROM dw_activity_minutes") == 2  # acme, the service
    clock.advance(minutes=TREND_MINUTES + 1)
    runtime.service.search("globex", HistoryQuery(text="password"))
    runtime.activity.flush()
    assert kit.scalar("SELECT count(*) FROM dw_activity_minutes WHERE org_id = 'acme'") == 0
    assert runtime.activity.last_hour().searches == 1


def test_a_closing_runtime_stores_what_it_counted(make_runtime, kit) -> None:
    runtime: HistoryRuntime = make_runtime()
    runtime.service.search("acme", HistoryQuery(text="password"))
    runtime.close()
    assert kit.scalar("SELECT sum(searches) FROM dw_activity_minutes WHERE org_id = 'acme'") == 1
