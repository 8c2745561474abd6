"""A sweep process killed (-9) in the middle of a pass: what it committed is exactly its
watermarks' advance (a batch's rows and watermarks are one transaction, docs/adr/0148), and
the next pass embeds every window once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.fakes import TEST_ACTOR

from memory.domain.history.chat_event import ChatEvent
from memory.domain.history.feature_flags import SEMANTIC_SEARCH_FLAG
from memory.domain.history.partition import Partition
from memory.entrypoints.history_runtime import HistoryRuntime
from memory.infrastructure.embedding.hashing import HashEmbeddingModel
from memory.infrastructure.postgres.database import Database
from memory.infrastructure.settings import Settings

MODEL = "hash:1024"
BROAD, DEEP = 120, 60  # one-window partitions, and one partition of DEEP windows
START = datetime.now(UTC) - timedelta(days=20)

KILLABLE_SWEEP = """
import sys, time
from memory.entrypoints.history_runtime import HistoryRuntime
from memory.infrastructure.embedding.hashing import HashEmbeddingModel
from memory.infrastructure.postgres.database import Database
from memory.infrastructure.settings import Settings


class Slow(HashEmbeddingModel):
    def embed_documents(self, texts):
        time.sleep(0.03)
        return super().embed_documents(texts)


database = Database(sys.argv[1], min_size=1, max_size=4)
database.open()
runtime = HistoryRuntime(Settings(), database, Slow(1024))
print("started", flush=True)
runtime.service.sweep(trigger="test", wait_for_locks=False)
print("finished", flush=True)
time.sleep(600)
"""


def window(channel: str, n: int) -> list[ChatEvent]:
    at = START + n * timedelta(minutes=40)
    return [
        ChatEvent(
            event_id=f"{channel}-{n}-{i}",
            provider="slack",
            channel_id=channel,
            sender="ali" if i % 2 == 0 else "agent",
            text=f"question {n} part {i} about the invoice of order {n * 7 + i}",
            occurred_at=at + timedelta(seconds=i),
        )
        for i in range(3)
    ]


def committed(database: Database) -> dict[str, Any]:
    """Per partition: the events its rows cover, and the events at or before its watermark."""
    with database.connection() as conn:
        rows = conn.execute(
            "SELECT external_channel_id AS c, source_event_ids AS ids FROM dw_message_embeddings"
        ).fetchall()
        marks = conn.execute(
            "SELECT w.external_channel_id AS c, count(e.event_id) AS upto"
            " FROM dw_sweep_watermarks w LEFT JOIN dw_chat_events e"
            " ON e.org_id = w.org_id AND e.provider = w.provider"
            " AND e.external_channel_id = w.external_channel_id"
            " AND (e.occurred_at, e.event_id) <= (w.position_at, w.position_event_id)"
            " GROUP BY 1"
        ).fetchall()
    covered: dict[str, list[str]] = {}
    for r in rows:
        covered.setdefault(r["c"], []).extend(r["ids"])
    return {"covered": covered, "upto": {r["c"]: r["upto"] for r in marks}}


def test_a_killed_sweep_leaves_rows_and_watermarks_together_and_a_rerun_embeds_each_once(
    database: Database,
) -> None:
    runtime = HistoryRuntime(Settings(), database, HashEmbeddingModel(1024))
    child = None
    try:
        runtime.service.set_global_flag(SEMANTIC_SEARCH_FLAG, True, actor=TEST_ACTOR)
        events = [e for c in range(BROAD) for e in window(f"B{c}", 0)]
        events += [e for n in range(DEEP) for e in window("DEEP", n)]
        for i in range(0, len(events), 500):
            runtime.service.ingest("acme", events[i : i + 500])
        child = subprocess.Popen(
            [sys.executable, "-c", KILLABLE_SWEEP, database.url],
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONWARNINGS": "ignore"},
        )
        assert child.stdout is not None
        assert child.stdout.readline().strip() == b"started"
        deadline = time.monotonic() + 120
        while True:
            with database.connection() as conn:
                row = conn.execute("SELECT count(*) AS n FROM dw_message_embeddings").fetchone()
            if row is not None and row["n"] >= (BROAD + DEEP) // 4:
                break
            assert time.monotonic() < deadline, "the child sweep made no progress"
            time.sleep(0.005)
        child.send_signal(signal.SIGKILL)
        child.wait(10)

        state = committed(database)
        total = sum(len(ids) for ids in state["covered"].values())
        assert 0 < total < 3 * (BROAD + DEEP), "killed after finishing: the test proved nothing"
        for channel, ids in state["covered"].items():
            # No row without its watermark's advance past it, no advance without its rows.
            assert len(ids) == len(set(ids)) == state["upto"].get(channel, 0), channel
        assert all(
            upto == len(state["covered"].get(channel, []))
            for channel, upto in state["upto"].items()
        )

        deadline = time.monotonic() + 30
        while True:  # the server notices the dead session and frees its partition locks
            report = runtime.service.sweep(trigger="test", wait_for_locks=False)
            if not report.partitions_busy and report.backlog and not report.backlog.partitions:
                break
            assert time.monotonic() < deadline, "the rerun did not finish"
            time.sleep(0.2)
        state = committed(database)
        covered = [e for ids in state["covered"].values() for e in ids]
        assert len(covered) == len(set(covered)) == len(events)
        deep = runtime.watermarks.get(Partition("acme", "slack", "DEEP"), MODEL)
        assert deep.windows_embedded == DEEP
    finally:
        if child is not None:
            if child.poll() is None:
                child.kill()
                child.wait(10)
            if child.stdout is not None:
                child.stdout.close()
        runtime.close()
