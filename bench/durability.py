"""Backups, restores and a synchronous standby (docs/operations.md, ADRs 0105-0107): what they
cost, measured in one run with real `memory serve` processes, PostgreSQL and pgBackRest.

    .venv/bin/python bench/durability.py                                # defaults below
    .venv/bin/python bench/durability.py --messages 10000 --policies 1000  # quicker

1. A home with `--messages` chat messages (20 orgs, conversations of 10, swept with
   hash:1024) and `--policies` policies (hash:384, projected): `memory db backup --full`
   while the server runs, then `memory db verify` and `memory db restore --latest` with it
   stopped; times, the database's size, the backup's size and what it takes in the
   repository.
2. Ingest over HTTP (batches of `--batch`, one commit each) on three primaries, in
   alternating rounds so that machine drift hits all alike: archiving off and no standby
   (the baseline), archiving only, archiving and a synchronous standby. Events/s and the
   ratio to the baseline.
3. Failover: ingest into the synchronous primary, `kill -9` its postmaster, `memory db
   promote` the standby, start `memory serve` there: acknowledged batches missing on the
   promoted standby, and the time from the kill to the first write it acknowledges.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import psycopg
from tqdm import tqdm

from memory.entrypoints.serve_process import ServeProcess, serve_environment
from memory.infrastructure.postgres.embedded import EmbeddedPostgres, free_port

TOKEN = "bench-admin-token-0123456789abcdefghijklmnopq"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
MODELS = {"MEMORY_POLICY_MODEL": "hash:384", "MEMORY_HISTORY_MODEL": "hash:1024"}
QUIET = {"MEMORY_SWEEP_INTERVAL": "3600", "MEMORY_SWEEP_DEBOUNCE": "3600"}
SYNCHRONOUS = {"MEMORY_DATABASE_SYNCHRONOUS_STANDBY": "on"}
ORGS = 20
CONVERSATION = 10
STARTUP_SECONDS = 120.0


@dataclass
class Row:
    measurement: str
    result: str
    ratio: str = ""
    notes: str = ""


def cli(home: Path, *args: str, **env: str) -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, "-m", "memory.entrypoints.cli", *args, "--json"],
        env=serve_environment({"MEMORY_HOME": str(home), **env}),
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"memory {' '.join(args)}: {result.stderr[-2000:]}")
    document: dict[str, Any] = json.loads(result.stdout)
    return document


@contextmanager
def served(home: Path, **env: str) -> Iterator[httpx.Client]:
    settings = {"MEMORY_HOME": str(home), "MEMORY_ADMIN_TOKEN": TOKEN, **MODELS, **QUIET, **env}
    server = ServeProcess(settings, log_path=home.parent / f"serve-{home.name}.log")
    try:
        server.wait_healthy(STARTUP_SECONDS)
    except BaseException:
        server.discard()
        raise
    try:
        with httpx.Client(base_url=server.base_url, headers=AUTH, timeout=120) as client:
            yield client
    finally:
        server.stop()


def events(org: str, first: int, count: int, start: datetime) -> list[dict[str, Any]]:
    """`count` messages from number `first`, in closed conversations of CONVERSATION."""
    out = []
    for n in range(first, first + count):
        conversation, position = divmod(n, CONVERSATION)
        at = start + timedelta(hours=conversation, minutes=position)
        out.append(
            {
                "event_id": f"{org}-{n}",
                "provider": "slack",
                "channel_id": f"c{conversation % 5}",
                "sender": f"user{n % 7}",
                "text": f"message {n} about the quarterly budget review and shipping plans",
                "occurred_at": at.isoformat(),
            }
        )
    return out


def live(org: str, first: int, count: int) -> list[dict[str, Any]]:
    """`count` messages from number `first`, written now (ingest as it happens)."""
    now = datetime.now(UTC).isoformat()
    return [
        {
            "event_id": f"{org}-{n}",
            "provider": "slack",
            "channel_id": "live",
            "sender": f"user{n % 7}",
            "text": f"message {n} about the quarterly budget review and shipping plans",
            "occurred_at": now,
        }
        for n in range(first, first + count)
    ]


def load(client: httpx.Client, messages: int, policies: int) -> None:
    per_org = messages // ORGS
    start = datetime.now(UTC) - timedelta(hours=per_org // CONVERSATION + 2)
    for o in tqdm(range(ORGS), desc="messages"):
        for first in range(0, per_org, 500):
            chunk = events(f"org{o}", first, min(500, per_org - first), start)
            client.post(f"/v1/orgs/org{o}/chat-events", json={"events": chunk}).raise_for_status()

    def store(i: int) -> None:
        body = {"policy_id": f"p{i}", "content": f"Policy {i}: expenses over {i} need approval."}
        client.post("/v1/policies", json=body).raise_for_status()

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        list(tqdm(pool.map(store, range(policies)), total=policies, desc="policies"))
    client.put("/v1/feature-flags/digital_worker_semantic_search", json={"enabled": True})
    client.post("/v1/sweep", timeout=3600).raise_for_status()
    deadline = time.monotonic() + 600
    while client.get("/healthz").json()["contexts"]["policy"]["projector"]["lag_events"]:
        if time.monotonic() > deadline:
            raise RuntimeError("the policy projector did not catch up")
        time.sleep(0.5)


def database_bytes(home: Path) -> int:
    url = cli(home, "db", "url")["url"]
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT pg_database_size(current_database())").fetchone()
    return int(row[0]) if row else 0


def mib(n: float) -> str:
    return f"{n / 2**20:,.1f} MiB"


def bench_backup_restore(root: Path, messages: int, policies: int) -> list[Row]:
    home = root / "data-home"
    cli(home, "db", "start")
    try:
        with served(home) as client:
            load(client, messages, policies)
            size = database_bytes(home)
            started = time.perf_counter()
            backup = cli(home, "db", "backup", "--full")["backup"]
            backup_seconds = time.perf_counter() - started
    finally:
        cli(home, "db", "stop", "--force")
    started = time.perf_counter()
    verified = cli(home, "db", "verify")
    verify_seconds = time.perf_counter() - started
    started = time.perf_counter()
    cli(home, "db", "restore", "--latest")
    restore_seconds = time.perf_counter() - started
    what = f"{messages:,} messages, {policies:,} policies"
    return [
        Row("database size", mib(size), "", what),
        Row(
            "full backup, online",
            f"{backup_seconds:.1f} s",
            "",
            f"backup {mib(backup['size_bytes'])}, stored {mib(backup['stored_bytes'])} (lz4)",
        ),
        Row(
            "verify (restore elsewhere, start, read all)",
            f"{verify_seconds:.1f} s",
            "",
            f"{verified['rows_read']:,} rows, {verified['events_read']:,} stored events",
        ),
        Row("restore --latest, server stopped", f"{restore_seconds:.1f} s", "", "into the home"),
    ]


@dataclass
class Primary:
    name: str
    home: Path
    port: str
    env: dict[str, str]


def make_primaries(root: Path) -> list[Primary]:
    plain = Primary("no archiving, no standby (baseline)", root / "plain", str(free_port()), {})
    archiving = Primary("archiving", root / "archiving", str(free_port()), {})
    synchronous = Primary(
        "archiving + synchronous standby", root / "sync", str(free_port()), SYNCHRONOUS
    )
    for primary in (plain, archiving, synchronous):
        cli(primary.home, "db", "start", "--port", primary.port)
    url = cli(plain.home, "db", "url")["url"]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET archive_mode = off")
    cli(plain.home, "db", "stop")
    cli(plain.home, "db", "start", "--port", plain.port)
    cli(root / "standby", "db", "standby", "--from", str(synchronous.home))
    cli(synchronous.home, "db", "stop")
    cli(synchronous.home, "db", "start", "--port", synchronous.port, **SYNCHRONOUS)
    return [plain, archiving, synchronous]


def ingest_rate(primary: Primary, count: int, batch: int, round_: int) -> float:
    with served(primary.home, **primary.env) as client:
        org = f"r{round_}"
        client.post(f"/v1/orgs/{org}/chat-events", json={"events": live(org, 10**7, 1)})
        started = time.perf_counter()
        for first in range(0, count, batch):
            chunk = live(org, first, batch)
            client.post(f"/v1/orgs/{org}/chat-events", json={"events": chunk}).raise_for_status()
        return count / (time.perf_counter() - started)


def bench_throughput(primaries: list[Primary], count: int, batch: int, rounds: int) -> list[Row]:
    rates: dict[str, list[float]] = {p.name: [] for p in primaries}
    for r in tqdm(range(rounds), desc="ingest rounds"):
        for primary in primaries if r % 2 == 0 else list(reversed(primaries)):
            rates[primary.name].append(ingest_rate(primary, count, batch, r))
    baseline = statistics.median(rates[primaries[0].name])
    return [
        Row(
            f"ingest over HTTP: {p.name}",
            f"{statistics.median(rates[p.name]):,.0f} events/s",
            f"{statistics.median(rates[p.name]) / baseline:.2f}",
            f"median of {rounds} rounds of {count:,} events, batches of {batch}",
        )
        for p in primaries
    ]


def bench_failover(root: Path, primary: Primary, batch: int) -> list[Row]:
    standby = root / "standby"
    acknowledged: list[int] = []
    stop = threading.Event()
    with served(primary.home, **primary.env) as client:

        def ingest() -> None:
            n = 0
            while not stop.is_set():
                chunk = live("failover", n * batch, batch)
                try:
                    response = client.post(
                        "/v1/orgs/failover/chat-events", json={"events": chunk}, timeout=5
                    )
                except httpx.HTTPError:
                    return
                if response.status_code != 201:
                    return
                acknowledged.append(n)
                n += 1

        writer = threading.Thread(target=ingest)
        writer.start()
        while len(acknowledged) < 50:
            time.sleep(0.05)
        pidfile = EmbeddedPostgres(primary.home).paths.data / "postmaster.pid"
        os.kill(int(pidfile.read_text().split()[0]), signal.SIGKILL)
        killed = time.perf_counter()
        writer.join(30)
        stop.set()
    cli(standby, "db", "promote")
    promoted = time.perf_counter() - killed
    with served(standby) as client:
        chunk = live("failover", 10**8, 1)
        client.post("/v1/orgs/failover/chat-events", json={"events": chunk}).raise_for_status()
        first_write = time.perf_counter() - killed
    cli(standby, "db", "start")
    url = cli(standby, "db", "url")["url"]
    with psycopg.connect(url) as conn:
        stored = {
            str(r[0])
            for r in conn.execute(
                "SELECT event_id FROM dw_chat_events WHERE org_id = 'failover'"
            ).fetchall()
        }
    missing = sum(
        1
        for n in acknowledged
        if not all(f"failover-{n * batch + i}" in stored for i in range(batch))
    )
    return [
        Row(
            "kill -9 of the synchronous primary: acknowledged batches missing",
            f"{missing} of {len(acknowledged)}",
            "",
            "after `memory db promote` of the standby",
        ),
        Row("kill -9 -> standby promoted", f"{promoted:.1f} s", "", "memory db promote"),
        Row(
            "kill -9 -> first write acknowledged by the promoted standby",
            f"{first_write:.1f} s",
            "",
            "promote, then `memory serve` starts on the standby's home",
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--policies", type=int, default=10_000)
    parser.add_argument("--ingest", type=int, default=5_000, help="events per ingest round")
    parser.add_argument("--batch", type=int, default=20, help="events per ingest request")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="memory-bench-durability-"))
    root.chmod(0o755)
    rows: list[Row] = []
    primaries: list[Primary] = []
    try:
        rows += bench_backup_restore(root, args.messages, args.policies)
        primaries = make_primaries(root)
        rows += bench_throughput(primaries, args.ingest, args.batch, args.rounds)
        rows += bench_failover(root, primaries[2], args.batch)
    finally:
        for home in [p.home for p in primaries] + [root / "standby", root / "data-home"]:
            subprocess.run(
                [sys.executable, "-m", "memory.entrypoints.cli", "db", "stop", "--force"],
                env=serve_environment({"MEMORY_HOME": str(home)}),
                capture_output=True,
                check=False,
            )
        shutil.rmtree(root, ignore_errors=True)
    print("| measurement | result | ratio vs baseline | notes |")
    print("|---|---|---|---|")
    for row in rows:
        print(f"| {row.measurement} | {row.result} | {row.ratio} | {row.notes} |")


if __name__ == "__main__":
    main()
