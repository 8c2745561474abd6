"""The sweep visits only partitions with work (docs/adr/0089) and serves orgs in fair slices
(docs/adr/0090): work marked by ingest in its transaction, cleared by a visit only if no
ingest raced with it, open tails due when their gap elapses, a new model's partitions all
due, and a new org's first windows embedded while another org's backlog is swept."""

from __future__ import annotations

from typing import Any

from tests.fakes import TEST_ACTOR, FakeModel

from memory.application.history.ports import DueQuery, VisitOutcome
from memory.application.history.sweep import SWEPT_ORG_FLAGS
from memory.domain.history.chat_event import ChatEvent
from memory.entrypoints.history_runtime import HistoryRuntime


def channels(kit, org: str, count: int, minutes: float = 0, prefix: str = "") -> list[ChatEvent]:
    return [
        kit.message(
            f"{prefix}{org}-{c}", minutes, f"a question about order {c} of {org}", channel=f"C{c}"
        )
        for c in range(count)
    ]


def test_a_pass_with_nothing_new_reads_no_partitions_messages(make_runtime, kit, clock) -> None:
    runtime: HistoryRuntime = make_runtime()
    kit.enable_semantic(runtime)
    runtime.service.ingest("acme", channels(kit, "acme", 20))
    runtime.service.ingest("globex", channels(kit, "globex", 5))
    log = kit.CountingLog(runtime.events)
    sweeper = kit.sweeper(runtime, events=log)
    assert sweeper.run_pass().windows_embedded == 25

    log.reads.clear()
    clock.advance(hours=2)
    idle = sweeper.run_pass()
    assert (idle.partitions, idle.slices, log.reads) == (0, 0, [])

    # k partitions with new messages: the pass reads those k and no other.
    runtime.service.ingest("acme", channels(kit, "acme", 3, minutes=1500, prefix="n"))
    clock.advance(hours=1)
    assert sweeper.run_pass().windows_embedded == 3
    assert {p.channel_id for _, p in log.reads} == {"C0", "C1", "C2"}


def test_an_open_tail_is_embedded_when_its_gap_elapses_without_a_new_message(
    make_runtime, kit, clock
) -> None:
    runtime: HistoryRuntime = make_runtime()
    kit.enable_semantic(runtime)
    minute = (clock() - kit.T0).total_seconds() / 60 - 5
    runtime.service.ingest("acme", [kit.message("t1", minute, "is the invoice ready yet?")])
    log = kit.CountingLog(runtime.events)
    sweeper = kit.sweeper(runtime, events=log)
    first = sweeper.run_pass()
    assert (first.windows_embedded, first.windows_open) == (0, 1)

    clock.advance(minutes=20)  # 25 minutes of quiet: still open, not due, not read
    log.reads.clear()
    assert (sweeper.run_pass().partitions, log.reads) == (0, [])
    backlog = sweeper.backlog()
    assert (backlog.partitions, backlog.oldest_since) == (0, None)

    clock.advance(minutes=6)  # 31 minutes: the gap closed it
    backlog = sweeper.backlog()
    assert backlog.partitions == 1 and backlog.longest[0].org_id == "acme"
    assert 0 < backlog.oldest_age_seconds <= 60
    assert sweeper.run_pass().windows_embedded == 1
    assert kit.covered() == ["t1"]


def test_an_ingest_that_races_with_a_visit_is_never_cleared_unseen(make_runtime, kit) -> None:
    runtime: HistoryRuntime = make_runtime()
    schedule = runtime.schedule
    model = runtime.service.model_id
    schedule.register(model, kit.clock())
    runtime.service.ingest("acme", [kit.message("a1", 0)])

    def due() -> list[Any]:
        return schedule.due(DueQuery(model, kit.clock(), 10, SWEPT_ORG_FLAGS))

    (taken,) = due()
    runtime.service.ingest("acme", [kit.message("a2", 1)])  # while the visit runs
    schedule.finish(model, [VisitOutcome(taken.partition, taken.changes, None, 0)], kit.clock())
    (again,) = due()  # the visit may not have seen a2: still due
    assert again.partition == taken.partition and again.changes == taken.changes + 1
    assert schedule.pending_windows("acme", model) == 1
    schedule.finish(model, [VisitOutcome(again.partition, again.changes, None, 0)], kit.clock())
    assert due() == [] and schedule.pending_windows("acme", model) == 0
    # A duplicate or a message that is not conversation makes no work.
    runtime.service.ingest("acme", [kit.message("a2", 1), kit.message("d", 2, decision="denied")])
    assert due() == []


def test_a_new_model_finds_every_partition_due_in_one_registration(make_runtime, kit) -> None:
    first: HistoryRuntime = make_runtime()
    kit.enable_semantic(first)
    first.service.ingest("acme", channels(kit, "acme", 4))
    assert first.service.sweep(trigger="t").windows_embedded == 4
    assert first.service.sweep(trigger="t").partitions == 0

    rebuild: HistoryRuntime = make_runtime(FakeModel("other:model", dimensions=8))
    assert rebuild.schedule.register("other:model", kit.clock()) is True
    assert rebuild.schedule.register("other:model", kit.clock()) is False
    assert rebuild.service.sweep(trigger="t").windows_embedded == 4
    assert len(kit.rows(model="other:model")) == 4
    # Dropping the model forgets its work; configured again, it rebuilds.
    first.service.drop_model("other:model", actor=TEST_ACTOR)
    assert kit.scalar("SELECT count(*) FROM dw_sweep_work WHERE model = 'other:model'") == 0


def test_a_new_orgs_first_window_is_embedded_in_the_next_slice_despite_a_backlog(
    make_runtime, kit
) -> None:
    """Issue 16 item 3 at a small size: acme has 4 channels x 60 windows waiting; a new org
    ingests after the pass started. Its window is embedded by the next slice, long before
    acme's backlog is done (before docs/adr/0090 a pass drained every partition it had
    listed when it started, and the new org waited for the next pass)."""
    model = FakeModel(dimensions=1024)
    runtime: HistoryRuntime = make_runtime(model)
    kit.enable_semantic(runtime)
    runtime.service.ingest(
        "acme",
        [
            kit.message(
                f"b{c}-{w:02d}", w * 31, f"backlog message {w} of channel {c}", channel=f"C{c}"
            )
            for c in range(4)
            for w in range(40)
        ],
    )

    def newcomer_arrives(call: int) -> None:
        if call == 2:
            runtime.service.ingest("newco", [kit.message("n1", 1300, "hello, where is my parcel?")])

    model.on_document_call = newcomer_arrives
    sweeper = kit.sweeper(runtime, slice_partitions=2, visit_windows=8, batch_windows=4)
    report = sweeper.run_pass()
    assert report.windows_embedded == 4 * 40 + 1
    order = model.attempted
    first_newco = next(i for i, t in enumerate(order) if "parcel" in t)
    # Ingested during the first slice (2 partitions x 8 windows), embedded in the second.
    assert first_newco <= 2 * (2 * 8)
    assert first_newco < len(order) // 4


def test_slices_take_orgs_round_robin(make_runtime, kit) -> None:
    runtime: HistoryRuntime = make_runtime()
    kit.enable_semantic(runtime)
    runtime.service.ingest("big", channels(kit, "big", 30))
    for org in ("o1", "o2", "o3"):
        runtime.service.ingest(org, channels(kit, org, 2))
    runtime.schedule.register(runtime.service.model_id, kit.clock())
    taken = runtime.schedule.due(
        DueQuery(runtime.service.model_id, kit.clock(), 6, SWEPT_ORG_FLAGS)
    )
    orgs = [v.partition.org_id for v in taken]
    # Every org's longest-waiting partition first, then every org's second (ties: org id).
    assert orgs == ["big", "o1", "o2", "o3", "big", "o1"]


def test_many_orgs_an_idle_pass_reads_nothing_and_every_org_gets_a_turn(
    make_runtime, kit, clock
) -> None:
    """Issue 16 item 7 at a small but telling size: 20 orgs x 10 channels. After the first
    pass, a pass with nothing new reads no partition; then one org gets a backlog and every
    other org one new window: each of those is embedded in the first slices, round-robin,
    before the backlog org's second turn."""
    model = FakeModel(dimensions=1024)
    runtime: HistoryRuntime = make_runtime(model)
    kit.enable_semantic(runtime)
    orgs = [f"org{o:02d}" for o in range(20)]
    for org in orgs:
        runtime.service.ingest(org, channels(kit, org, 10))
    log = kit.CountingLog(runtime.events)
    sweeper = kit.sweeper(runtime, events=log, slice_partitions=8, visit_windows=4, batch_windows=4)
    assert sweeper.run_pass().windows_embedded == 200
    log.reads.clear()
    idle = sweeper.run_pass()
    assert (idle.partitions, idle.slices, log.reads) == (0, 0, [])
    assert sweeper.backlog().partitions == 0

    minute = 1000
    runtime.service.ingest(
        "org00",
        [
            kit.message(
                f"big-{c}-{w}", 400 + w * 31, f"backlog item {w} of channel {c}", channel=f"C{c}"
            )
            for c in range(10)
            for w in range(30)
        ],
    )
    for org in orgs[1:]:
        runtime.service.ingest(
            org, [kit.message(f"{org}-new", minute, f"news for {org}: the parcel arrived damaged")]
        )
    model.document_calls.clear()
    report = sweeper.run_pass()
    assert report.windows_embedded == 10 * 30 + 19
    order = model.attempted
    served = [next(i for i, t in enumerate(order) if f"news for {org}" in t) for org in orgs[1:]]
    # 20 orgs due at once, 8 partitions a slice, org00 one turn in each: the other 19 orgs
    # are all served within the first 3 slices (<= 3 x 4 windows of org00 before them).
    assert max(served) < 19 + 3 * 4
