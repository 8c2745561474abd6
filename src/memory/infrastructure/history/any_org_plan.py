"""The sweep's statements on one org are planned for any org, not for the value given.

With a value, the planner estimates `org_id = 'x'` from the column's statistics. An org the
statistics have not seen yet (a new org's bulk ingest, not yet analysed) is estimated at one
row when the known orgs fill the most-common-values list, as they do with a few orgs: the
planner then scans the org through `(org_id, occurred_at)` and filters, every row of the org
for each statement. Measured right after ingesting 10,000 one-window partitions: the
upsert's check that a window's events still exist 24.6 ms per window instead of 0.13 ms, a
partition's lag count 24.6 ms instead of 0.05 ms (docs/adr/0136). A generic plan estimates
the org as an average one, which leaves the primary key and the partition's timeline the
cheapest whatever the statistics say. Only for statements whose every condition an index
serves: a generic plan guesses a third for each range condition, which can turn a probe for
rows outside a range into a scan. Used by the upsert's check and the lag count; a partition's
reads are ordered for its own indexes instead (`chat_events`, docs/adr/0136).
"""

from __future__ import annotations

from typing import Any

import psycopg

# For the rest of the transaction: a connection of `Database.connection()` is in one.
GENERIC_PLANS = "SET LOCAL plan_cache_mode = force_generic_plan"


def plan_for_any_org(conn: psycopg.Connection[Any]) -> None:
    """The statements of `conn`'s transaction from here on use generic plans."""
    conn.execute(GENERIC_PLANS)
