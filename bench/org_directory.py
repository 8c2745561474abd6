"""The org directory (GET /v1/orgs, docs/adr/0070): what one page costs with many orgs, and
what keeping `dw_orgs` costs ingest, measured in one run.

    .venv/bin/python bench/org_directory.py               # defaults below
    .venv/bin/python bench/org_directory.py --orgs 1000   # quicker

Starts a private PostgreSQL cluster in a temporary home, fills it with `--orgs` orgs (two
partitions each, sweep state for one of them, an org flag for every tenth org, a retention
for every seventh) and `--messages` messages per org, plus a few large orgs, then measures:

- a page of the directory (first page, a page deep in the listing, a prefix page) against a
  baseline that computes the same page the obvious way: membership as the DISTINCT union of
  the four source tables, messages as `count(*)` per org at read time;
- the plan of the page statement (EXPLAIN ANALYZE, BUFFERS);
- ingest of 500-event batches with the directory's triggers enabled and disabled,
  interleaved, so machine drift hits both alike.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from psycopg import ClientCursor

from bench_cluster import cluster
from memory.application.history.ports import OrgPageQuery
from memory.domain.history.chat_event import ChatEvent
from memory.infrastructure.history.chat_events import PostgresChatEventLog
from memory.infrastructure.history.org_directory import PostgresOrgDirectory, page_statement
from memory.infrastructure.postgres.database import Database

MODEL = "hash:1024"
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
LARGE_ORG_MESSAGES = 200_000
LARGE_ORGS = 3
DIRECTORY_TRIGGERS = ("dw_orgs_events_inserted", "dw_orgs_partition_added")

# The page the obvious way: every source table's org ids, de-duplicated and sorted, then a
# count of each org's events at read time. Same answer for membership and messages.
BASELINE = """
WITH known AS (
    SELECT org_id FROM dw_chat_partitions
    UNION SELECT org_id FROM org_feature_flags
    UNION SELECT org_id FROM dw_org_retention
), page AS (
    SELECT org_id FROM known
    WHERE org_id COLLATE "C" > %(after)s
    ORDER BY org_id COLLATE "C" LIMIT %(limit)s
)
SELECT p.org_id, (SELECT count(*) FROM dw_chat_events e WHERE e.org_id = p.org_id) AS messages
FROM page p ORDER BY p.org_id COLLATE "C"
"""


def org(i: int) -> str:
    return f"org-{i:06d}"


def fill(db: Database, orgs: int, messages: int) -> None:
    start = time.perf_counter()
    with db.connection() as conn:
        conn.execute(
            "INSERT INTO dw_chat_events (org_id, event_id, provider, external_channel_id,"
            " sender, event_type, decision, message_text, occurred_at)"
            " SELECT 'org-' || lpad(o::text, 6, '0'), 'e' || m, 'slack', 'C' || (m %% 2),"
            " 'ali', 'message', 'received', 'message number ' || m,"
            " %(t0)s + m * interval '1 minute'"
            " FROM generate_series(0, %(orgs)s - 1) AS o, generate_series(1, %(messages)s) AS m",
            {"orgs": orgs, "messages": messages, "t0": NOW - timedelta(days=3)},
        )
        conn.execute(
            "INSERT INTO dw_chat_events (org_id, event_id, provider, external_channel_id,"
            " sender, event_type, decision, message_text, occurred_at)"
            " SELECT 'org-' || lpad(o::text, 6, '0'), 'big' || m, 'slack', 'C0',"
            " 'ali', 'message', 'received', 'a large org message ' || m,"
            " %(t0)s + m * interval '1 second'"
            " FROM generate_series(0, %(large)s - 1) AS o, generate_series(1, %(n)s) AS m",
            {"large": LARGE_ORGS, "n": LARGE_ORG_MESSAGES, "t0": NOW - timedelta(days=3)},
        )
        conn.execute(
            "INSERT INTO dw_chat_partitions (org_id, provider, external_channel_id)"
            " SELECT DISTINCT org_id, provider, external_channel_id FROM dw_chat_events"
        )
        conn.execute(
            "INSERT INTO dw_sweep_partition_state (org_id, provider, external_channel_id,"
            " model, position_at, position_event_id, windows_embedded, poison_windows,"
            " poison_events, stalled, open_windows, swept_at, embedded_at)"
            " SELECT org_id, provider, external_channel_id, %(model)s,"
            " %(t0)s + interval '1 day', 'e1', 10, (hashtext(org_id) & 1), 0, false, 1,"
            " %(now)s, %(now)s"
            " FROM dw_chat_partitions WHERE external_channel_id = 'C0'",
            {"model": MODEL, "t0": NOW - timedelta(days=3), "now": NOW},
        )
        conn.execute(
            "INSERT INTO org_feature_flags (org_id, flag, enabled)"
            " SELECT 'org-' || lpad(o::text, 6, '0'), 'digital_worker_semantic_search', true"
            " FROM generate_series(0, %(orgs)s - 1, 10) AS o",
            {"orgs": orgs},
        )
        conn.execute(
            "INSERT INTO dw_org_retention (org_id, retention_days)"
            " SELECT 'org-' || lpad(o::text, 6, '0'), 90"
            " FROM generate_series(0, %(orgs)s - 1, 7) AS o",
            {"orgs": orgs},
        )
    with db.session() as conn:
        conn.execute("VACUUM ANALYZE")
    total = orgs * messages + LARGE_ORGS * LARGE_ORG_MESSAGES
    print(f"filled {orgs} orgs, {total} events in {time.perf_counter() - start:.1f} s")


def timed(run: Callable[[], object], repeats: int) -> tuple[float, float]:
    for _ in range(3):
        run()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.95) - 1]


def measure_pages(db: Database, orgs: int, repeats: int) -> None:
    directory = PostgresOrgDirectory(db)

    def page(after: str | None, limit: int, prefix: str | None = None) -> Callable[[], object]:
        query = OrgPageQuery(after, prefix, None, limit, MODEL, NOW)
        return lambda: directory.page(query)

    def baseline(after: str | None, limit: int) -> Callable[[], object]:
        def run() -> object:
            with db.connection() as conn:
                return conn.execute(BASELINE, {"after": after or "", "limit": limit}).fetchall()

        return run

    deep = org(orgs // 2)
    cases = [
        ("first page, 50 orgs", page(None, 50), baseline(None, 50)),
        ("first page, 200 orgs", page(None, 200), baseline(None, 200)),
        ("page after half the orgs, 50", page(deep, 50), baseline(deep, 50)),
        ("prefix page (org-0001), 50", page(None, 50, "org-0001"), None),
    ]
    print(f"\nA page of the directory, {orgs} orgs ({repeats} runs each, ms)")
    print(f"{'page':<32}{'p50':>9}{'p95':>9}{'baseline p50':>15}{'ratio':>9}")
    for label, ours, theirs in cases:
        p50, p95 = timed(ours, repeats)
        if theirs is None:
            print(f"{label:<32}{p50:>9.2f}{p95:>9.2f}{'-':>15}{'-':>9}")
            continue
        b50, _ = timed(theirs, max(3, repeats // 5))
        print(f"{label:<32}{p50:>9.2f}{p95:>9.2f}{b50:>15.2f}{b50 / p50:>8.1f}x")


def explain(db: Database) -> None:
    statement, params = page_statement(OrgPageQuery(None, None, None, 51, MODEL, NOW))
    with db.connection() as conn:
        query = ClientCursor(conn).mogrify(statement, params)
        rows = conn.execute(f"EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) {query}").fetchall()
    print("\nEXPLAIN ANALYZE of the first page (51 rows)")
    for row in rows:
        print("  " + str(next(iter(row.values()))))


def measure_ingest(db: Database, rounds: int) -> None:
    log = PostgresChatEventLog(db)
    counter = iter(range(10**9))

    def batch(org_id: str) -> list[ChatEvent]:
        return [
            ChatEvent(
                event_id=f"i{next(counter)}",
                provider="slack",
                channel_id="C0",
                sender="ali",
                text="a message to ingest for the benchmark",
                occurred_at=NOW - timedelta(minutes=30),
            )
            for _ in range(500)
        ]

    def set_triggers(enabled: bool) -> None:
        verb = "ENABLE" if enabled else "DISABLE"
        with db.connection() as conn:
            for trigger in DIRECTORY_TRIGGERS:
                table = "dw_chat_events" if "events" in trigger else "dw_chat_partitions"
                conn.execute(f"ALTER TABLE {table} {verb} TRIGGER {trigger}")

    timings: dict[bool, list[float]] = {True: [], False: []}
    for i in range(rounds):
        for enabled in (True, False) if i % 2 == 0 else (False, True):
            set_triggers(enabled)
            events = batch(org(i % 50))
            start = time.perf_counter()
            log.append(org(i % 50), events)
            timings[enabled].append((time.perf_counter() - start) * 1000)
    set_triggers(True)
    with_triggers = statistics.median(timings[True])
    without = statistics.median(timings[False])
    print(f"\nIngest of 500-event batches ({rounds} each, interleaved, ms)")
    print(f"{'triggers':<20}{'p50':>9}")
    print(f"{'disabled (baseline)':<20}{without:>9.2f}")
    print(f"{'enabled':<20}{with_triggers:>9.2f}   ({with_triggers / without:.2f}x)")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--orgs", type=int, default=5000)
    parser.add_argument("--messages", type=int, default=40, help="messages per org")
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--ingest-rounds", type=int, default=40)
    args = parser.parse_args()
    with cluster("org_directory") as url:
        db = Database(url, min_size=1, max_size=4)
        db.open()
        try:
            db.migrate()
            fill(db, args.orgs, args.messages)
            measure_pages(db, args.orgs, args.repeats)
            explain(db)
            measure_ingest(db, args.ingest_rounds)
        finally:
            db.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
