"""Policy search benchmark: load N policies, then measure the HTTP API.

    .venv/bin/python bench/policy_search.py                  # 10k policies, in-process setup
    .venv/bin/python bench/policy_search.py --policies 100000
    .venv/bin/python bench/policy_search.py --base-url http://127.0.0.1:8080   # a running server

In-process mode starts a private PostgreSQL cluster in a temporary home and `memory serve`
processes on free loopback ports (one per search mode / model), so everything is measured
over real HTTP. Policies are loaded with the `hash:384` model through the application's
command API in batches (the fast path); store throughput over HTTP is measured separately on
a sample. Measured:

- search latency p50/p95/p99, without and with metadata filters, HNSW vs exact scan, and the
  recall@10 of HNSW against the exact answer;
- store throughput over HTTP (sequential and concurrent), and the projector's throughput;
- store-to-searchable lag: from the commit of a write to its row answering over HTTP;
- search once orgs have policies of their own (docs/adr/0102): in the global namespace and
  in one org's (global rows and its own), over the global rows plus `--org-policies` more;
- the same search with the local model (`local:multilingual-e5-small`), with the share of the
  server's time spent embedding the query (from the `Server-Timing` header).

Every ratio in the table is against the baseline measured in the same run: unfiltered HNSW
search with the hash model.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from tqdm import tqdm

from memory.application.policy.commands import NewPolicy, PolicyCommands
from memory.domain.audit.admin_action import Actor
from memory.domain.policy.namespace import PolicyNamespace
from memory.entrypoints.serve_process import served
from memory.infrastructure.audit.audit_log import PostgresAuditTrail
from memory.infrastructure.embedding.hashing import HashEmbeddingModel
from memory.infrastructure.embedding.local_e5 import LocalE5Model
from memory.infrastructure.policy import reembed as reembed_module
from memory.infrastructure.policy.event_store import EventSourcedPolicyLog
from memory.infrastructure.postgres.database import Database
from memory.infrastructure.postgres.embedded import EmbeddedPostgres, create_database

LOCAL_MODEL = "local:multilingual-e5-small"
SOURCES = [f"source-{i}" for i in range(10)]
TAGS = [f"tag-{i}" for i in range(20)]
SERVER_START_SECONDS = 120
WARMUP_QUERIES = 20
# Who the bench's writes name in their events and audit records.
BENCH_ACTOR = Actor("bench", "bench/policy_search.py")
# Every search asks for the API's default page (50) above a threshold low enough that the
# hash model's bag-of-words similarities fill it, so each answer carries a full page.
SEARCH_LIMIT = 50
SEARCH_THRESHOLD = 0.1
RECALL_K = 10

_WORD_LIST = """
access account accounts accrual acknowledge address administrator agreement allowance annual
applicant application approval approve approver archive asset assets audit auditor authority
authorised backup badge balance benefit benefits board bonus breach budget building business
calendar candidate card cash category certificate change claim classification client closure
code compliance confidential conflict consent contract contractor control copy cost credential
customer data deadline delegate department deposit device director disclosure disposal document
domestic duty eligible email emergency employee employees encryption entitlement equipment
escalation ethics evidence exception expense expenses external facility finance financial fraud
gift government grievance guest hardware hazard health hiring holiday incident information
insurance internal international inventory investigation invoice laptop leave legal licence
manager meal medical meeting mileage mobile monitoring network notice office onboarding overtime
parental password payment payroll penalty performance permission personal phone policy portal
privacy procedure procurement property protection purchase quarterly receipt record records
recruitment refund register reimbursement remote report request retention review risk role
safety salary schedule security sensitive server signature software staff storage supplier
system tax team technology termination training transfer travel vacation vendor visitor warning
weekly workplace
"""
WORDS = _WORD_LIST.split()

# The servers the bench starts accept this admin key (MEMORY_ADMIN_TOKEN); the bench sends it.
BENCH_ADMIN_TOKEN = os.environ.get("MEMORY_ADMIN_TOKEN") or "bench-admin-token-0123456789abcdefghij"
AUTH = {"Authorization": f"Bearer {BENCH_ADMIN_TOKEN}"}


def policy_text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 40))) + "."


def policy(i: int, rng: random.Random, prefix: str = "p") -> NewPolicy:
    return NewPolicy(
        f"{prefix}{i:07d}",
        policy_text(rng),
        {
            "title": f"Policy {i}",
            "source": SOURCES[i % len(SOURCES)],
            "tags": rng.sample(TAGS, 2),
            "level": i % 5,
        },
    )


def query_text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 6)))


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


@dataclass
class Row:
    case: str
    unit: str
    p50: float
    p95: float | None = None
    p99: float | None = None
    note: str = ""
    extra: dict[str, float] = field(default_factory=dict)


@dataclass
class Report:
    rows: list[Row] = field(default_factory=list)

    def add(self, row: Row) -> None:
        self.rows.append(row)
        print(f"  {row.case}: p50 {row.p50:.2f} {row.unit} {row.note}", file=sys.stderr)

    def table(self, baseline_case: str) -> str:
        base = next((r.p50 for r in self.rows if r.case == baseline_case), None)
        lines = [
            "| case | p50 | p95 | p99 | unit | p50 vs baseline | notes |",
            "|---|---:|---:|---:|---|---:|---|",
        ]
        for r in self.rows:
            compared = r.case.startswith(("search", "estimate"))
            ratio = f"{r.p50 / base:.2f}x" if base and compared else ""
            lines.append(
                f"| {r.case} | {r.p50:.2f} | {_fmt(r.p95)} | {_fmt(r.p99)} | {r.unit} "
                f"| {ratio} | {r.note} |"
            )
        return "\n".join(lines)


def _fmt(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}"


# --- servers -----------------------------------------------------------------------------


@contextmanager
def serve(database_url: str, workdir: Path, name: str, **settings: str) -> Iterator[str]:
    """`memory serve` in a subprocess on a free loopback port; yields its base URL."""
    env = {
        "MEMORY_ADMIN_TOKEN": BENCH_ADMIN_TOKEN,
        "MEMORY_DATABASE_URL": database_url,
        "MEMORY_LOG_LEVEL": "WARNING",
        **{f"MEMORY_{k.upper()}": v for k, v in settings.items()},
    }
    log_path = workdir / f"serve-{name}.log"
    with served(env, deadline_seconds=SERVER_START_SECONDS, log_path=log_path) as server:
        yield server.base_url


def wait_caught_up(base: str, label: str) -> float:
    """Wait until the server's projector has processed the whole log; returns seconds."""
    started = time.perf_counter()
    with tqdm(desc=label, unit="event", file=sys.stderr) as bar:
        while True:
            projector = httpx.get(f"{base}/healthz", timeout=10).json()["contexts"]["policy"][
                "projector"
            ]
            bar.total = projector["head"] or 0
            bar.n = projector["position"] or 0
            bar.refresh()
            if projector["lag_events"] == 0 and projector["position"] == projector["head"]:
                return time.perf_counter() - started
            time.sleep(0.25)


# --- loading -------------------------------------------------------------------------------


class NoWait:
    """Bulk loading does not wait for each batch to become searchable."""

    def wait(self, notification_id: int, timeout: float) -> bool:
        return False


def bulk_load(
    database_url: str, model: Any, count: int, batch: int, seed: int, prefix: str = "p"
) -> float:
    """Store `count` policies through the command API, `batch` per transaction. Returns the
    seconds it took (embedding included)."""
    with _audited_commands(database_url, model) as commands:
        return _load(commands, model, count, batch, seed, prefix)


@contextmanager
def _audited_commands(database_url: str, model: Any) -> Iterator[PolicyCommands]:
    """The command API as `memory serve` wires it: each write's event joins the transaction
    of its audit record (docs/adr/0103), so the bench pays what a server pays."""
    database = Database(database_url, min_size=1, max_size=2)
    database.open()
    log = EventSourcedPolicyLog.for_database(database)
    try:
        yield PolicyCommands(
            log,
            model,
            NoWait(),
            audit=PostgresAuditTrail(database),
            max_content_chars=100_000,
            wait_timeout=0,
        )
    finally:
        log.close()
        database.close()


def org_load(database_url: str, count: int, orgs: int, seed: int) -> float:
    """Store `count` policies spread over `orgs` orgs' own namespaces (docs/adr/0102), one
    batch per org. Returns the seconds it took."""
    rng = random.Random(seed)
    per_org = count // orgs
    started = time.perf_counter()
    with (
        _audited_commands(database_url, HashEmbeddingModel(384)) as commands,
        tqdm(total=per_org * orgs, desc="load org policies", unit="policy", file=sys.stderr) as bar,
    ):
        for org in range(orgs):
            commands.store_many(
                [policy(i, rng, "o") for i in range(per_org)],
                actor=BENCH_ACTOR,
                namespace=PolicyNamespace.of_org(org_name(org)),
            )
            bar.update(per_org)
    return time.perf_counter() - started


def org_name(index: int) -> str:
    return f"org-{index:03d}"


def _load(
    commands: PolicyCommands, model: Any, count: int, batch: int, seed: int, prefix: str
) -> float:
    rng = random.Random(seed)
    started = time.perf_counter()
    with tqdm(total=count, desc=f"load {model.identity.id}", unit="policy", file=sys.stderr) as bar:
        for start in range(0, count, batch):
            size = min(batch, count - start)
            commands.store_many(
                [policy(start + i, rng, prefix) for i in range(size)], actor=BENCH_ACTOR
            )
            bar.update(size)
    return time.perf_counter() - started


def replay(database_url: str) -> tuple[float, float]:
    """Project the whole log for hash:384 the way `memory policies reembed` does (rows
    first, one HNSW build at the end). Returns (seconds for the rows, for the index)."""
    database = Database(database_url, min_size=1, max_size=2)
    database.open()
    log = EventSourcedPolicyLog.connect(database_url)
    built: list[float] = []
    original = reembed_module.ensure_hnsw_index

    def timed_index(conn: Any, model_id: str) -> None:
        started = time.perf_counter()
        original(conn, model_id)
        built.append(time.perf_counter() - started)

    bar = tqdm(desc="replay hash:384", unit="event", file=sys.stderr)

    def progress(position: int | None, head: int | None) -> None:
        bar.total, bar.n = head or 0, position or 0
        bar.refresh()

    started = time.perf_counter()
    try:
        reembed_module.ensure_hnsw_index = timed_index  # type: ignore[assignment]
        reembed_module.reembed(database, HashEmbeddingModel(384), log, on_progress=progress)
    finally:
        reembed_module.ensure_hnsw_index = original  # type: ignore[assignment]
        bar.close()
        log.close()
        database.close()
    index_seconds = built[0] if built else 0.0
    return time.perf_counter() - started - index_seconds, index_seconds


def create_migrated_database(admin_url: str, name: str) -> str:
    url = create_database(admin_url, name)
    migrated = Database(url, min_size=1, max_size=2)
    migrated.open()
    migrated.migrate()
    migrated.close()
    return url


# --- measurements --------------------------------------------------------------------------


@dataclass
class SearchRun:
    latencies: list[float] = field(default_factory=list)  # client-side, ms
    embed_ms: list[float] = field(default_factory=list)  # server-side, from Server-Timing
    shares: list[float] = field(default_factory=list)  # embed / (embed + db)
    refs: list[list[str]] = field(default_factory=list)


def timed_searches(
    client: httpx.Client,
    queries: Sequence[str],
    label: str,
    *,
    namespace: str | None = None,
    **body: Any,
) -> SearchRun:
    """Sequential searches after a warm-up (in `namespace`, else the admin key's: global)."""
    params = {} if namespace is None else {"namespace": namespace}
    for query in queries[:WARMUP_QUERIES]:
        client.post(
            "/v1/policies/search", params=params, json={"query": query, **body}
        ).raise_for_status()
    run = SearchRun()
    for query in tqdm(
        queries[WARMUP_QUERIES:], desc=label, unit="query", file=sys.stderr, leave=False
    ):
        started = time.perf_counter()
        response = client.post("/v1/policies/search", params=params, json={"query": query, **body})
        run.latencies.append((time.perf_counter() - started) * 1000)
        response.raise_for_status()
        timing = dict(
            part.strip().split(";dur=") for part in response.headers["server-timing"].split(",")
        )
        embed, db = float(timing["embed"]), float(timing["db"])
        run.embed_ms.append(embed)
        run.shares.append(embed / (embed + db) if embed + db else 0.0)
        run.refs.append([r["embedding_ref"] for r in response.json()["results"]])
    return run


def namespace_rows(
    args: argparse.Namespace,
    url: str,
    base: str,
    client: httpx.Client,
    queries: Sequence[str],
    common: dict[str, Any],
) -> list[Row]:
    """Searches once orgs have policies of their own beside the global ones: the global
    namespace (only global rows qualify) and one org's (the global rows and its own)."""
    seconds = org_load(url, args.org_policies, args.orgs, 8)
    wait_caught_up(base, "projector catch-up (org policies)")
    total = args.policies + args.org_policies
    own = args.org_policies // args.orgs
    org = org_name(args.orgs // 2)
    return [
        Row(
            f"load {args.org_policies} org policies ({args.orgs} orgs, command API)",
            "policies/s",
            args.org_policies / seconds,
            note=f"{seconds:.1f} s; then projected by the running server",
        ),
        search_row(
            f"search, HNSW, namespace global ({args.policies} of {total} rows)",
            timed_searches(client, queries, "hnsw global", namespace="global", **common),
        ),
        search_row(
            f"search, HNSW, namespace org:{org} (global + {own} own, of {total} rows)",
            timed_searches(client, queries, "hnsw org", namespace=f"org:{org}", **common),
        ),
    ]


def search_row(case: str, run: SearchRun | list[float], note: str = "") -> Row:
    latencies = run.latencies if isinstance(run, SearchRun) else run
    return Row(
        case,
        "ms",
        statistics.median(latencies),
        percentile(latencies, 95),
        percentile(latencies, 99),
        note,
    )


def recall(approximate: list[list[str]], exact: list[list[str]]) -> float:
    hits = total = 0
    for a, e in zip(approximate, exact, strict=True):
        hits += len(set(a[:RECALL_K]) & set(e[:RECALL_K]))
        total += len(e[:RECALL_K])
    return hits / total if total else 1.0


def store_throughput(
    base: str, count: int, workers: int, prefix: str, seed: int, model: str = "hash:384"
) -> Row:
    rng = random.Random(seed)
    bodies = [
        {"policy_id": p.policy_id, "content": p.content, "metadata": p.metadata}
        for p in (policy(i, rng, prefix) for i in range(count))
    ]
    latencies: list[float] = []

    def store(body: dict[str, Any], client: httpx.Client) -> None:
        started = time.perf_counter()
        response = client.post("/v1/policies", json=body)
        latencies.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 201, response.text
        assert response.json()["searchable"], "store answered before it was searchable"

    started = time.perf_counter()
    with httpx.Client(base_url=base, timeout=30, headers=AUTH) as client:
        if workers == 1:
            for body in tqdm(bodies, desc="store x1", unit="req", file=sys.stderr, leave=False):
                store(body, client)
        else:
            with ThreadPoolExecutor(workers) as pool:
                list(
                    tqdm(
                        pool.map(lambda b: store(b, client), bodies),
                        total=len(bodies),
                        desc=f"store x{workers}",
                        unit="req",
                        file=sys.stderr,
                        leave=False,
                    )
                )
    elapsed = time.perf_counter() - started
    return Row(
        f"store over HTTP, {model}, {workers} client{'s' if workers > 1 else ''} (latency)",
        "ms",
        statistics.median(latencies),
        percentile(latencies, 95),
        percentile(latencies, 99),
        f"{count / elapsed:.0f} stores/s; each returns once searchable",
    )


def store_to_searchable_lag(base: str, database_url: str, count: int, seed: int) -> Row:
    """Commit a write through the command API without waiting, then poll its reference over
    HTTP until the server answers it: the time a write takes to become searchable."""
    rng = random.Random(seed)
    lags: list[float] = []
    with (
        _audited_commands(database_url, HashEmbeddingModel(384)) as commands,
        httpx.Client(base_url=base, timeout=10, headers=AUTH) as client,
    ):
        for i in tqdm(range(count), desc="lag", unit="write", file=sys.stderr, leave=False):
            receipt = commands.store(*_fields(policy(i, rng, "lag")), actor=BENCH_ACTOR)
            committed = time.perf_counter()
            while client.get(f"/v1/embeddings/{receipt.embedding_ref}").status_code != 200:
                pass
            lags.append((time.perf_counter() - committed) * 1000)
    return Row(
        "store-to-searchable lag (commit -> GET by ref answers)",
        "ms",
        statistics.median(lags),
        percentile(lags, 95),
        percentile(lags, 99),
        "polled over HTTP; includes a GET round trip",
    )


def _fields(p: NewPolicy) -> tuple[str, str, Any]:
    return p.policy_id, p.content, p.metadata


# --- the run -------------------------------------------------------------------------------


def run_in_process(args: argparse.Namespace) -> str:
    report = Report()
    workdir = Path(tempfile.mkdtemp(prefix="memory-bench-"))
    workdir.chmod(0o755)
    cluster = EmbeddedPostgres(workdir / "home", durable=not args.no_fsync)
    try:
        admin_url = cluster.start()
        url = create_migrated_database(admin_url, "bench_hash")
        rng = random.Random(args.seed)
        queries = [query_text(rng) for _ in range(args.queries + WARMUP_QUERIES)]
        source_filter = {"source": SOURCES[3]}
        combined_filter = {"source": SOURCES[3], "tags": {"any": TAGS[:4]}}
        common: dict[str, Any] = {"similarity_threshold": SEARCH_THRESHOLD, "limit": SEARCH_LIMIT}

        load_seconds = bulk_load(url, HashEmbeddingModel(384), args.policies, args.batch, 1)
        report.add(
            Row(
                f"bulk load {args.policies} policies (command API, batches of {args.batch})",
                "policies/s",
                args.policies / load_seconds,
                note=f"{load_seconds:.1f} s; events recorded, not yet projected",
            )
        )
        replay_seconds, index_seconds = replay(url)
        report.add(
            Row(
                "projection replay (hash:384: vectors come from the events)",
                "events/s",
                args.policies / replay_seconds,
                note=f"{replay_seconds:.1f} s; then one HNSW build: {index_seconds:.1f} s",
            )
        )
        with serve(url, workdir, "hnsw", policy_model="hash:384") as hnsw:
            with (
                serve(
                    url, workdir, "exact", policy_model="hash:384", policy_search_mode="exact"
                ) as exact,
                httpx.Client(base_url=hnsw, timeout=30, headers=AUTH) as h,
                httpx.Client(base_url=exact, timeout=30, headers=AUTH) as e,
            ):
                hnsw_run = timed_searches(h, queries, "hnsw", **common)
                baseline = hnsw_run.latencies
                report.add(search_row("search, HNSW, no filter (baseline)", baseline))
                lat = timed_searches(h, queries, "hnsw+source", filter=source_filter, **common)
                report.add(search_row("search, HNSW, filter source (10% of rows)", lat))
                lat = timed_searches(
                    h, queries, "hnsw+source+tags", filter=combined_filter, **common
                )
                report.add(search_row("search, HNSW, filter source + tags any-of (~2%)", lat))
                exact_run = timed_searches(e, queries, "exact", **common)
                report.add(
                    search_row(
                        "search, exact scan, no filter",
                        exact_run.latencies,
                        f"HNSW recall@{RECALL_K} vs exact: "
                        f"{recall(hnsw_run.refs, exact_run.refs):.3f}",
                    )
                )
                lat = timed_searches(e, queries, "exact+source", filter=source_filter, **common)
                report.add(search_row("search, exact scan, filter source", lat))
                if args.org_policies:
                    for row in namespace_rows(args, url, hnsw, h, queries, common):
                        report.add(row)
            report.add(store_throughput(hnsw, args.store_sample, 1, "http1-", 2))
            report.add(store_throughput(hnsw, args.store_sample, 8, "http8-", 3))
            report.add(store_to_searchable_lag(hnsw, url, args.lag_sample, 4))

        if args.local_policies:
            local_url = create_migrated_database(admin_url, "bench_local")
            with serve(local_url, workdir, "local", policy_model=LOCAL_MODEL) as local:
                model = LocalE5Model()
                seconds = bulk_load(local_url, model, args.local_policies, 32, 5)
                report.add(
                    Row(
                        f"bulk load {args.local_policies} policies with the local model",
                        "policies/s",
                        args.local_policies / seconds,
                        note="embedding on write, batches of 32",
                    )
                )
                wait_caught_up(local, "local projector catch-up")
                with httpx.Client(base_url=local, timeout=30, headers=AUTH) as client:
                    local_run = timed_searches(client, queries, "local", **common)
                embed_p50 = statistics.median(local_run.embed_ms)
                report.add(
                    search_row(
                        f"search, HNSW, local model, {args.local_policies} rows",
                        local_run.latencies,
                        f"query embedding = {statistics.median(local_run.shares) * 100:.0f}% of "
                        f"server time (median); embedding p50 {embed_p50:.1f} ms",
                    )
                )
                report.add(
                    Row(
                        f"estimate: local-model search at {args.policies} rows",
                        "ms",
                        statistics.median(baseline) + embed_p50,
                        note="HNSW baseline p50 at this size + local query-embedding p50",
                    )
                )
                report.add(
                    store_throughput(
                        local, min(args.store_sample, 100), 1, "lhttp-", 6, model=LOCAL_MODEL
                    )
                )
    finally:
        cluster.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    return report.table("search, HNSW, no filter (baseline)")


def run_against(args: argparse.Namespace) -> str:
    """Against a running server: load over HTTP, then measure what one server can show."""
    report = Report()
    rng = random.Random(args.seed)
    queries = [query_text(rng) for _ in range(args.queries + WARMUP_QUERIES)]
    common: dict[str, Any] = {"similarity_threshold": SEARCH_THRESHOLD, "limit": SEARCH_LIMIT}
    report.add(store_throughput(args.base_url, args.policies, 8, f"bench{args.seed}-", 1))
    with httpx.Client(base_url=args.base_url, timeout=30, headers=AUTH) as client:
        run = timed_searches(client, queries, "search", **common)
        report.add(
            search_row(
                "search, no filter (baseline)",
                run.latencies,
                f"query embedding = {statistics.median(run.shares) * 100:.0f}% of server time",
            )
        )
        lat = timed_searches(
            client, queries, "search+source", filter={"source": SOURCES[3]}, **common
        )
        report.add(search_row("search, filter source", lat))
    return report.table("search, no filter (baseline)")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--policies", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=300, help="measured queries per case")
    parser.add_argument("--base-url", help="measure a running server instead (loads over HTTP)")
    parser.add_argument("--batch", type=int, default=200, help="policies per bulk-load batch")
    parser.add_argument("--store-sample", type=int, default=300, help="stores timed over HTTP")
    parser.add_argument("--lag-sample", type=int, default=200, help="writes timed for lag")
    parser.add_argument(
        "--local-policies",
        type=int,
        default=None,
        help="policies loaded for the local-model run (default: min(policies, 2000); 0 skips)",
    )
    parser.add_argument(
        "--org-policies",
        type=int,
        default=None,
        help="policies of orgs' own namespaces loaded after the global searches (default: "
        "as many as --policies; 0 skips)",
    )
    parser.add_argument("--orgs", type=int, default=100, help="orgs the org policies spread over")
    parser.add_argument("--no-fsync", action="store_true", help="run the cluster without fsync")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    if args.local_policies is None:
        args.local_policies = min(args.policies, 2000)
    if args.org_policies is None:
        args.org_policies = args.policies
    started = time.perf_counter()
    table = run_against(args) if args.base_url else run_in_process(args)
    print(
        f"\npolicy search benchmark: {args.policies} policies, {args.queries} queries per case, "
        f"{os.cpu_count()} CPUs, {time.perf_counter() - started:.0f} s\n"
    )
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
