"""Three `memory serve` replicas on one PostgreSQL (issue 12): directly, and behind PgBouncer
in transaction pooling mode (a pooled URL for statements, a direct one for sessions).

Mixed writes and searches go through all three; the policy projector's leader is killed
with -9 mid-stream and a standby takes over; every acknowledged store becomes searchable
through every surviving replica; sweeps through all replicas embed each window once; an
ingest NOTIFY wakes only the ingest listener's leader; the cluster restarts underneath them
and they recover without a restart.
"""

from __future__ import annotations

import concurrent.futures
import subprocess
import time
from collections.abc import Callable
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from tests.conftest import AUTH_HEADERS
from tests.e2e.drills import http
from tests.e2e.pgbouncer import pgbouncer
from tests.e2e.processes import HASH_MODELS, serve, stack_traces, terminate, wait_healthy

from memory.infrastructure.postgres.embedded import EmbeddedPostgres, create_database, free_port

# Minutes of real servers and clusters: its file starts first under xdist (docs/adr/0143).
pytestmark = pytest.mark.long(seconds=75)
REPLICAS = 3
# The bound: a standby takes over, and every acknowledged store is searchable through
# the survivors, within 5 s of the leader's death.
TAKEOVER_SECONDS = 5.0
SEARCHABLE_SECONDS = 5.0
# After the cluster restarts (generous: a loaded 2-core machine).
RECOVERY_SECONDS = 15.0
STORES = 24
KILL_AFTER = 8
ORGS = ("acme", "globex", "initech")
CHANNELS = ("c1", "c2")
SEMANTIC = "/v1/feature-flags/digital_worker_semantic_search"


class Replica:
    def __init__(self, proc: subprocess.Popen[bytes], port: int) -> None:
        self.proc = proc
        self.base = f"http://127.0.0.1:{port}"

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return http.get(self.base + path, timeout=30.0, headers=AUTH_HEADERS, **kwargs)

    def post(self, path: str, **kwargs: Any) -> httpx.Response:
        return http.post(self.base + path, timeout=60.0, headers=AUTH_HEADERS, **kwargs)

    def health(self) -> dict[str, Any]:
        body: dict[str, Any] = self.get("/healthz").json()
        return body

    def projector_role(self) -> str:
        return str(self.health()["contexts"]["policy"]["projector"]["role"])

    def sweeper(self) -> dict[str, Any]:
        sweeper: dict[str, Any] = self.health()["contexts"]["history"]["sweeper"]
        return sweeper

    def finds(self, policy_id: str, content: str) -> bool:
        response = self.post(
            "/v1/policies/search", json={"query": content, "similarity_threshold": 0.99}
        )
        assert response.status_code == 200, response.text
        return policy_id in {hit["policy_id"] for hit in response.json()["results"]}


def _until(condition: Callable[[], bool], seconds: float, what: str) -> float:
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < seconds, f"{what}: not within {seconds} s"
        time.sleep(0.1)
    return time.monotonic() - started


def _content(i: int) -> str:
    return f"Policy number {i}: expenses above {i * 100} EUR need a second approval."


def _events(org: str, channel: str, batch: int) -> dict[str, Any]:
    """Two closed conversations (hours apart, hours ago) of three messages each."""
    start = datetime.now(UTC) - timedelta(hours=24 - 3 * batch)
    events = []
    for conversation in range(2):
        for message in range(3):
            at = start + timedelta(hours=conversation * 2, minutes=message)
            events.append(
                {
                    "event_id": f"{org}-{channel}-{batch}-{conversation}-{message}",
                    "provider": "slack",
                    "channel_id": channel,
                    "sender": "ali",
                    "text": f"batch {batch} conversation {conversation} message {message}: "
                    "the quarterly numbers are ready for review",
                    "occurred_at": at.isoformat(),
                }
            )
    return {"events": events}


def _embedding_rows(url: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT count(*) FROM dw_message_embeddings").fetchone()
    assert row is not None
    return int(row[0])


def _embedded_total(replicas: list[Replica]) -> int:
    return sum(int(r.sweeper()["windows_embedded_total"]) for r in replicas)


@pytest.mark.parametrize("topology", ["direct", "pgbouncer"])
def test_three_replicas_fail_over_share_the_sweep_and_survive_a_cluster_restart(
    cluster: EmbeddedPostgres, cluster_home: Path, topology: str
) -> None:
    direct_url = create_database(cluster.url, "replicas")
    settings = {
        "MEMORY_DATABASE_URL": direct_url,
        "MEMORY_SWEEP_INTERVAL": "3600",  # only NOTIFYs and requests sweep
        "MEMORY_SWEEP_DEBOUNCE": "0.2",
        **HASH_MODELS,
    }
    with ExitStack() as stack:
        if topology == "pgbouncer":
            pooled = stack.enter_context(pgbouncer(direct_url))
            settings |= {"MEMORY_DATABASE_URL": pooled, "MEMORY_DATABASE_DIRECT_URL": direct_url}
        replicas: list[Replica] = []
        logs: list[str] = []
        try:
            for i in range(REPLICAS):
                port = free_port()
                replicas.append(Replica(serve(cluster_home / f"r{i}", port, **settings), port))
            for replica in replicas:
                assert wait_healthy(replica.base + "/healthz", replica.proc).status_code == 200
            live = _sweep_once_across_replicas(replicas, direct_url)
            acknowledged = _kill_the_projector_leader_mid_stream(live)
            _restart_the_cluster_underneath(live, cluster, direct_url, acknowledged)
        finally:
            for replica in replicas:
                if replica.proc.poll() is None:
                    logs.append(terminate(replica.proc))
        for log in logs:
            assert not stack_traces(log), stack_traces(log)


def _sweep_once_across_replicas(replicas: list[Replica], url: str) -> list[Replica]:
    """Ingests through every replica, sweeps through every replica at once: each window is
    embedded once, and only the listening replica is woken by the ingests."""
    assert (
        http.put(
            replicas[0].base + SEMANTIC, json={"enabled": True}, headers=AUTH_HEADERS
        ).status_code
        == 200
    )
    _until(
        lambda: (
            sorted(r.sweeper()["ingest_listener"] for r in replicas)
            == ["leader", "standby", "standby"]
        ),
        TAKEOVER_SECONDS * 2,
        "one ingest listener",
    )
    k = 0
    for org in ORGS:
        for channel in CHANNELS:
            response = replicas[k % REPLICAS].post(
                f"/v1/orgs/{org}/chat-events", json=_events(org, channel, k)
            )
            assert response.status_code == 201, response.text
            k += 1
    windows = len(ORGS) * len(CHANNELS) * 2
    with concurrent.futures.ThreadPoolExecutor(REPLICAS) as pool:
        sweeps = list(pool.map(lambda r: r.post("/v1/sweep"), replicas))
    assert all(s.status_code == 200 for s in sweeps), [s.text for s in sweeps]
    _until(lambda: _embedding_rows(url) == windows, RECOVERY_SECONDS, "every window embedded")
    listener = next(r for r in replicas if r.sweeper()["ingest_listener"] == "leader")
    _until(
        lambda: listener.sweeper()["passes"].get("notify", 0) >= 1,
        RECOVERY_SECONDS,
        "the listening replica's sweeper woken by the ingests",
    )
    time.sleep(1.0)  # a pass still running would add to the totals
    assert _embedded_total(replicas) == windows == _embedding_rows(url), "a window embedded twice"
    for replica in replicas:
        if replica is not listener:
            assert "notify" not in replica.sweeper()["passes"], "a standby woken by an ingest"
    # History searches through every replica find windows whoever embedded them.
    for replica in replicas:
        found = replica.get("/v1/orgs/acme/history/search", params={"q": "xylophone"}).json()
        assert any(hit["matched_by"] == "semantic" for hit in found["results"])
    return list(replicas)


def _kill_the_projector_leader_mid_stream(live: list[Replica]) -> dict[str, str]:
    """Stores and searches through every replica; kill -9 the projector's leader
    mid-stream; a standby takes over and every acknowledged store becomes searchable
    through every survivor. Returns the acknowledged stores."""
    _until(
        lambda: sorted(r.projector_role() for r in live) == ["leader", "standby", "standby"],
        TAKEOVER_SECONDS * 2,
        "one projector leader",
    )
    leader = next(r for r in live if r.projector_role() == "leader")
    acknowledged: dict[str, str] = {}
    killed_at = 0.0
    for i in range(STORES):
        if i == KILL_AFTER:
            leader.proc.kill()
            leader.proc.communicate(timeout=30)
            killed_at = time.monotonic()
            live.remove(leader)
        replica = live[i % len(live)]
        policy_id = f"p-{i}"
        stored = replica.post("/v1/policies", json={"policy_id": policy_id, "content": _content(i)})
        assert stored.status_code == 201, stored.text
        acknowledged[policy_id] = _content(i)
        if stored.json()["searchable"]:
            # Read-your-writes through the replica that wrote, whoever projects.
            assert replica.finds(policy_id, _content(i)), policy_id
        other = live[(i + 1) % len(live)]
        assert other.post("/v1/policies/search", json={"query": _content(i)}).status_code == 200
        if i == KILL_AFTER:
            took_over = _until(
                lambda: sorted(r.projector_role() for r in live) == ["leader", "standby"],
                TAKEOVER_SECONDS,
                "a standby takes over",
            )
            assert time.monotonic() - killed_at < TAKEOVER_SECONDS + took_over
    stream_end = time.monotonic()
    for replica in live:
        _until(
            lambda replica=replica: all(  # type: ignore[misc]
                replica.finds(pid, text) for pid, text in acknowledged.items()
            ),
            SEARCHABLE_SECONDS + (time.monotonic() - stream_end),
            "every acknowledged store searchable through a survivor",
        )
    return acknowledged


def _restart_the_cluster_underneath(
    live: list[Replica], cluster: EmbeddedPostgres, url: str, acknowledged: dict[str, str]
) -> None:
    """Stop and start PostgreSQL under the running replicas: they recover by themselves
    (pools, leases, LISTEN), and nothing acknowledged is lost."""
    rows_before = _embedding_rows(url)
    cluster.stop()
    cluster.start()
    for replica in live:
        _until(
            lambda replica=replica: replica.get("/healthz").status_code == 200,  # type: ignore[misc]
            RECOVERY_SECONDS,
            "healthy after the restart",
        )
    _until(
        lambda: sorted(r.projector_role() for r in live) == ["leader", "standby"],
        RECOVERY_SECONDS,
        "a projector leader after the restart",
    )
    _until(
        lambda: sorted(r.sweeper()["ingest_listener"] for r in live) == ["leader", "standby"],
        RECOVERY_SECONDS,
        "an ingest listener after the restart",
    )
    for i, replica in enumerate(live):
        policy_id = f"after-{i}"
        stored = replica.post(
            "/v1/policies", json={"policy_id": policy_id, "content": _content(1000 + i)}
        )
        assert stored.status_code == 201, stored.text
        assert stored.json()["searchable"] is True, "the projector has not resumed"
        acknowledged[policy_id] = _content(1000 + i)
    for replica in live:
        assert all(replica.finds(pid, text) for pid, text in acknowledged.items())
    ingested = live[-1].post("/v1/orgs/globex/chat-events", json=_events("globex", "c9", 0))
    assert ingested.status_code == 201, ingested.text
    _until(
        lambda: _embedding_rows(url) == rows_before + 2,
        RECOVERY_SECONDS,
        "the background sweeper embeds again",
    )
