"""A streaming standby (issue 19 item 5): `memory db standby --from HOME` in a new home,
the primary killed with -9 during ingest while MEMORY_DATABASE_SYNCHRONOUS_STANDBY=on,
`memory db promote`: no acknowledged event is missing, and the promoted home takes writes."""

from __future__ import annotations

import os
import signal
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
import psycopg
import pytest
from tests.e2e.drills import home_url, memory_here, seeded_home
from tests.e2e.processes import memory_cli, terminate
from tests.e2e.test_backup_restore import _cli_json, _serve, _until

from memory.infrastructure.postgres.embedded import EmbeddedPostgres, free_port

# Minutes of real servers and clusters: its file starts first under xdist (docs/adr/0143).
pytestmark = pytest.mark.long(seconds=65)
SYNCHRONOUS = {"MEMORY_DATABASE_SYNCHRONOUS_STANDBY": "on"}


def _events(batch: int) -> dict[str, object]:
    return {
        "events": [
            {
                "event_id": f"b{batch}-{i}",
                "provider": "slack",
                "channel_id": "failover",
                "sender": "ali",
                "text": f"batch {batch} event {i}",
                "occurred_at": datetime.now(UTC).isoformat(),
            }
            for i in range(5)
        ]
    }


def _postmaster_pid(home: Path) -> int:
    pidfile = EmbeddedPostgres(home).paths.data / "postmaster.pid"
    return int(pidfile.read_text().splitlines()[0])


def test_kill_9_of_a_synchronous_primary_then_promote_loses_no_acknowledged_event(
    cluster_home: Path,
) -> None:
    primary, standby = seeded_home(cluster_home / "primary"), cluster_home / "standby"
    # The primary exists before it waits for a standby (its first writes need none).
    # A fixed port: the standby follows the primary at the address it copied it from.
    port = str(free_port())
    assert memory_cli(primary, "db", "start", "--port", port).returncode == 0
    try:
        made = _cli_json(standby, "db", "standby", "--from", str(primary))
        assert made["standby"] == str(standby)
        assert memory_here(primary, "db", "stop").returncode == 0
        started = memory_cli(primary, "db", "start", "--port", port, **SYNCHRONOUS)
        assert started.returncode == 0, started.stderr
        url = started.stdout.strip()

        def synchronous() -> bool:
            with psycopg.connect(url) as conn:
                row = conn.execute(
                    "SELECT sync_state FROM pg_stat_replication WHERE application_name = %s",
                    ("memory_standby",),
                ).fetchone()
            return row == ("sync",)

        _until(synchronous, "the standby streaming synchronously")

        api = _serve(primary, **SYNCHRONOUS)
        acknowledged: list[int] = []
        stop = threading.Event()

        def ingest() -> None:
            batch = 0
            while not stop.is_set():
                try:
                    response = api.call(
                        "POST", "/v1/orgs/acme/chat-events", json=_events(batch), timeout=5.0
                    )
                except httpx.HTTPError:
                    return
                if response.status_code != 201:
                    return
                acknowledged.append(batch)
                batch += 1

        writer = threading.Thread(target=ingest)
        writer.start()
        try:
            _until(lambda: len(acknowledged) >= 30, "ingest under way")
            os.kill(_postmaster_pid(primary), signal.SIGKILL)
            killed_at = time.monotonic()
            writer.join(30)
        finally:
            stop.set()
            writer.join(30)
            terminate(api.proc)

        promoted = _cli_json(standby, "db", "promote")
        assert promoted["promoted"] is True
        with psycopg.connect(home_url(standby)) as conn:
            stored = {
                str(r[0])
                for r in conn.execute(
                    "SELECT event_id FROM dw_chat_events WHERE org_id = 'acme'"
                ).fetchall()
            }
        missing = [b for b in acknowledged if f"b{b}-0" not in stored or f"b{b}-4" not in stored]
        assert missing == [], f"{len(missing)} acknowledged batches missing: {missing[:5]}"

        # The promoted standby is a primary: a server on its home takes writes.
        promoted_api = _serve(standby)
        try:
            written = promoted_api.call("POST", "/v1/orgs/acme/chat-events", json=_events(10**6))
            assert written.status_code == 201, written.text
            assert time.monotonic() - killed_at < 120
        finally:
            terminate(promoted_api.proc)
    finally:
        for home in (primary, standby):
            memory_here(home, "db", "stop", "--force")


def test_standby_refuses_a_home_that_has_a_cluster_and_a_primary_that_is_not_running(
    cluster_home: Path,
) -> None:
    primary, other = cluster_home / "primary", cluster_home / "other"
    stopped = memory_here(other, "db", "standby", "--from", str(primary))
    assert stopped.returncode == 1 and "no cluster under" in stopped.stderr
    assert memory_here(seeded_home(primary), "db", "start").returncode == 0
    try:
        itself = memory_here(primary, "db", "standby", "--from", str(primary))
        assert itself.returncode == 1 and "already has a cluster" in itself.stderr
        no_password = memory_here(other, "db", "standby", "--from", "host=127.0.0.1 port=1")
        assert no_password.returncode == 1 and "password" in no_password.stderr
        assert not EmbeddedPostgres(other).initialised()
    finally:
        memory_here(primary, "db", "stop")
    not_running = memory_cli(other, "db", "standby", "--from", str(primary))
    assert not_running.returncode == 1 and "is not running" in not_running.stderr
