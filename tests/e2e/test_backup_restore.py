"""The restore drill (issue 19, docs/operations.md): real servers, real PostgreSQL, real
pgBackRest. Ingest, store, create a key -> `memory db backup` (online) -> more writes ->
note T -> erase an org, a sender, delete a policy, more writes -> stop -> `memory db restore
--until T` -> serve: what was acknowledged before T is there and nothing after it, but the
erasures recorded after T are applied again; search and new writes work; nothing is
embedded twice."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from tests.conftest import AUTH_HEADERS, TEST_ADMIN_TOKEN
from tests.e2e.drills import home_url, http, memory_here, seeded_home
from tests.e2e.processes import HASH_MODELS, STARTUP_DEADLINE_SECONDS, memory_cli, terminate

from memory.entrypoints.serve_process import ServeProcess
from memory.infrastructure.postgres.embedded import EmbeddedPostgres

# Minutes of real servers and clusters: its file starts first under xdist (docs/adr/0143).
pytestmark = pytest.mark.long(seconds=160)
SEMANTIC = "/v1/feature-flags/digital_worker_semantic_search"
QUIET = {**HASH_MODELS, "MEMORY_SWEEP_INTERVAL": "3600", "MEMORY_SWEEP_DEBOUNCE": "0.2"}
WAIT_SECONDS = 60.0


class Api:
    def __init__(self, proc: ServeProcess) -> None:
        self.proc = proc

    def call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        headers = kwargs.pop("headers", AUTH_HEADERS)
        timeout = kwargs.pop("timeout", 60.0)
        return http.request(
            method, self.proc.base_url + path, headers=headers, timeout=timeout, **kwargs
        )

    def ok(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self.call(method, path, **kwargs)
        assert response.status_code in (200, 201, 204), f"{method} {path}: {response.text}"
        return response.json() if response.content else None

    def texts_embedded(self) -> int:
        metrics = self.call("GET", "/metrics").text
        pattern = r'^memory_model_texts_total\{[^}]*operation="embed_documents"[^}]*\} (\S+)$'
        return int(sum(float(m) for m in re.findall(pattern, metrics, re.MULTILINE)))

    def windows_embedded(self) -> int:
        health = self.ok("GET", "/healthz")
        return int(health["contexts"]["history"]["sweeper"]["windows_embedded_total"])


def _events(org: str, batch: int, sender: str = "ali") -> dict[str, Any]:
    """One closed conversation (hours ago) of three messages."""
    start = datetime.now(UTC) - timedelta(hours=20 - batch)
    return {
        "events": [
            {
                "event_id": f"{org}-{batch}-{i}",
                "provider": "slack",
                "channel_id": "general",
                "sender": sender,
                "text": f"batch {batch} message {i}: the xylophone budget review is ready",
                "occurred_at": (start + timedelta(minutes=i)).isoformat(),
            }
            for i in range(3)
        ]
    }


def _until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def _history_ids(api: Api, org: str) -> set[str]:
    found = api.ok("GET", f"/v1/orgs/{org}/history/search", params={"q": "xylophone"})
    return {hit["event_id"] for hit in found["results"]}


def _serve(home: Path, **settings: str) -> Api:
    """`memory serve` on `home`, its log in a file beside it (a busy server fills a pipe)."""
    environment = {"MEMORY_HOME": str(home), "MEMORY_ADMIN_TOKEN": TEST_ADMIN_TOKEN}
    proc = ServeProcess(
        environment | QUIET | settings, log_path=home.parent / f"serve-{home.name}.log"
    )
    try:
        proc.wait_healthy(STARTUP_DEADLINE_SECONDS)
    except BaseException:
        proc.discard()
        raise
    return Api(proc)


def _cli_json(home: Path, *args: str) -> dict[str, Any]:
    result = memory_cli(home, *args, "--json")
    assert result.returncode == 0, result.stderr
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def _write(api: Api, policy: str, org: str, batch: int, sender: str = "ali") -> None:
    api.ok("POST", "/v1/policies", json={"policy_id": policy, "content": f"Policy {policy}."})
    api.ok("POST", f"/v1/orgs/{org}/chat-events", json=_events(org, batch, sender))


def test_restore_drill_until_a_moment_reapplies_later_erasures_and_embeds_nothing_twice(
    cluster_home: Path,
) -> None:
    home = seeded_home(cluster_home / "home")
    api = _serve(home)
    try:
        api.ok("PUT", SEMANTIC, json={"enabled": True})
        _write(api, "keep", "acme", 1)
        _write(api, "erased-later", "globex", 1)
        api.ok("POST", "/v1/orgs/acme/chat-events", json=_events("acme", 2, sender="bob"))
        key = api.ok("POST", "/v1/api-keys", json={"name": "drill", "scopes": ["policies:read"]})
        api.ok("POST", "/v1/sweep")
        _until(lambda: api.windows_embedded() == 3, "three windows embedded")

        backup = _cli_json(home, "db", "backup")  # online: the server keeps serving
        assert backup["backup"]["type"] == "full"
        listed = _cli_json(home, "db", "backups")
        assert [b["label"] for b in listed["backups"]] == [backup["backup"]["label"]]

        _write(api, "before-t", "acme", 3)
        api.ok("POST", "/v1/sweep")
        _until(lambda: api.windows_embedded() == 4, "four windows embedded")
        time.sleep(1.0)
        target = datetime.now(UTC)
        time.sleep(1.0)

        api.ok("DELETE", "/v1/orgs/globex")
        api.ok("DELETE", "/v1/orgs/acme/chat-events", json={"sender": "bob"})
        api.ok("DELETE", "/v1/policies/erased-later")
        _write(api, "after-t", "acme", 4)
        assert "acme-4-0" in _history_ids(api, "acme")
    finally:
        terminate(api.proc)

    restored = _cli_json(home, "db", "restore", "--until", target.isoformat())
    assert restored["erasures_reapplied"] == 3, restored
    assert restored["from_backup"] == backup["backup"]["label"]

    api = _serve(home)
    try:
        # Acknowledged before T: there. After T: not there. Erased after T: erased again.
        for policy, status in (("keep", 200), ("before-t", 200), ("after-t", 404)):
            assert api.call("GET", f"/v1/policies/{policy}").status_code == status, policy
        assert api.call("GET", "/v1/policies/erased-later").status_code == 404
        acme = _history_ids(api, "acme")
        assert {"acme-1-0", "acme-3-0"} <= acme
        assert not any(e.startswith(("acme-2-", "acme-4-")) for e in acme), acme
        assert _history_ids(api, "globex") == set()
        # The key created before the backup still works.
        own = api.call(
            "GET", "/v1/api-keys/self", headers={"Authorization": f"Bearer {key['secret']}"}
        )
        assert own.status_code == 200, own.text
        actions = [e["action"] for e in api.ok("GET", "/v1/audit", params={"limit": 50})["entries"]]
        assert actions.count("org.erased") == 1 and actions.count("policy.deleted") == 1
        # Search works, semantic hits included; new writes work.
        found = api.ok("POST", "/v1/policies/search", json={"query": "Policy keep."})
        assert "keep" in {hit["policy_id"] for hit in found["results"]}
        _write(api, "new", "acme", 5)
        api.ok("POST", "/v1/sweep")
        _until(lambda: "acme-5-0" in _history_ids(api, "acme"), "the new window searchable")
        # Nothing embedded twice: this server embedded the new policy and the new window,
        # and no restored policy or window again.
        _until(lambda: api.windows_embedded() >= 1, "the new window embedded")
        time.sleep(1.0)
        assert api.windows_embedded() == 1
        assert api.texts_embedded() == 2
        # /metrics tells when the newest backup finished (docs/adr/0108).
        age = re.search(
            r"^memory_backup_last_success_timestamp_seconds (\S+)$",
            api.call("GET", "/metrics").text,
            re.MULTILINE,
        )
        stopped = datetime.fromisoformat(backup["backup"]["stopped_at"]).timestamp()
        assert age is not None and float(age[1]) == stopped
    finally:
        terminate(api.proc)
    assert not EmbeddedPostgres(home).running()


def _marker(home: Path) -> list[tuple[Any, ...]]:
    """The rows of a table the tests write, read through the running cluster."""
    with psycopg.connect(home_url(home)) as conn:
        return conn.execute("SELECT n FROM drill_marker ORDER BY n").fetchall()


def _mark(home: Path, n: int) -> None:
    with psycopg.connect(home_url(home), autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS drill_marker (n int)")
        conn.execute("INSERT INTO drill_marker VALUES (%s)", (n,))


@dataclass(frozen=True)
class BackedUp:
    home: Path
    before_backup: datetime


@pytest.fixture(scope="module")
def backed_up() -> Iterator[BackedUp]:
    """A stopped home with the service's tables, one full backup, a row written before it
    and one after (the tests below refuse restores on it and check nothing changed). Set
    up with the commands run in this process (tests/e2e/drills.py)."""
    root = Path(tempfile.mkdtemp(prefix="memory-test-"))
    root.chmod(0o755)
    home = seeded_home(root / "home")
    try:
        assert memory_here(home, "db", "start").returncode == 0
        try:
            assert memory_here(home, "keys", "list").returncode == 0  # migrations
            _mark(home, 1)
            before_backup = datetime.now(UTC)
            assert memory_here(home, "db", "backup").returncode == 0
            _mark(home, 2)
        finally:
            assert memory_here(home, "db", "stop", "--force").returncode == 0
        yield BackedUp(home, before_backup)
    finally:
        memory_here(home, "db", "stop", "--force")
        shutil.rmtree(root, ignore_errors=True)


def _unchanged(home: Path) -> None:
    """Both rows, and no restore left half-done."""
    assert memory_here(home, "db", "start").returncode == 0
    try:
        assert _marker(home) == [(1,), (2,)]
    finally:
        memory_here(home, "db", "stop")
    assert not (EmbeddedPostgres(home).paths.data.parent / "data.restore").exists()


def test_restore_refuses_times_no_backup_reaches_with_the_reason(backed_up: BackedUp) -> None:
    home = backed_up.home
    unparsable = memory_here(home, "db", "restore", "--until", "yesterday")
    assert unparsable.returncode == 2 and "--until" in unparsable.stderr
    zoneless = memory_here(home, "db", "restore", "--until", "2026-01-01T00:00:00")
    assert zoneless.returncode == 2 and "time zone" in zoneless.stderr
    future = datetime.now(UTC) + timedelta(days=1)
    ahead = memory_here(home, "db", "restore", "--until", future.isoformat())
    assert ahead.returncode == 1 and "is in the future" in ahead.stderr
    early = memory_here(home, "db", "restore", "--until", backed_up.before_backup.isoformat())
    assert early.returncode == 1 and "before the oldest backup" in early.stderr
    _unchanged(home)


def test_restore_refuses_a_home_a_server_runs_on_and_verify_reads_the_backup(
    backed_up: BackedUp,
) -> None:
    home = backed_up.home
    assert memory_here(home, "db", "start").returncode == 0
    try:
        owned = memory_here(home, "db", "restore", "--latest")
        assert owned.returncode == 1
        assert "is running (memory db start" in owned.stderr, owned.stderr
        assert _marker(home) == [(1,), (2,)]
    finally:
        assert memory_here(home, "db", "stop").returncode == 0
    verified = _cli_json(home, "db", "verify")
    assert verified["verified"] is True and verified["tables_read"] > 5
    _unchanged(home)


def test_a_corrupt_repository_fails_restore_and_verify_and_changes_nothing(
    backed_up: BackedUp,
) -> None:
    home = backed_up.home
    # The backup's largest file cut short.
    repository = home / "backups" / "backup" / "memory"
    largest = max(
        (p for p in repository.glob("*F/pg_data/**/*") if p.is_file()),
        key=lambda p: p.stat().st_size,
    )
    largest.write_bytes(largest.read_bytes()[: largest.stat().st_size // 2])
    corrupt = memory_cli(home, "db", "restore", "--latest")
    assert corrupt.returncode == 1, corrupt.stderr
    assert "nothing was changed" in corrupt.stderr
    assert memory_here(home, "db", "verify").returncode == 1
    _unchanged(home)


def test_restore_and_verify_of_a_home_without_backups_say_so(cluster_home: Path) -> None:
    home = cluster_home / "home"
    assert memory_here(home, "db", "start").returncode == 0
    assert memory_here(home, "db", "stop").returncode == 0
    empty = memory_here(home, "db", "restore", "--latest")
    assert empty.returncode == 1 and "holds no backup yet" in empty.stderr
    assert "holds no backup yet" in memory_here(home, "db", "verify").stderr


BATCH = 10


def test_a_backup_taken_during_full_speed_ingest_restores_whole_batches_only(
    cluster_home: Path,
) -> None:
    home = seeded_home(cluster_home / "home")
    api = _serve(home)
    acknowledged: list[int] = []
    failures: list[str] = []
    stop = threading.Event()

    def ingest() -> None:
        batch = 0
        while not stop.is_set() and not failures:
            events = [
                {
                    "event_id": f"b{batch}-{i}",
                    "provider": "slack",
                    "channel_id": "load",
                    "sender": "ali",
                    "text": f"batch {batch} event {i} of the load",
                    "occurred_at": datetime.now(UTC).isoformat(),
                }
                for i in range(BATCH)
            ]
            try:
                response = api.call("POST", "/v1/orgs/acme/chat-events", json={"events": events})
            except httpx.HTTPError as exc:
                failures.append(f"batch {batch}: {exc!r}")
                return
            if response.status_code != 201:
                failures.append(f"batch {batch}: {response.status_code} {response.text}")
                return
            acknowledged.append(batch)
            batch += 1

    writer = threading.Thread(target=ingest)
    try:
        writer.start()
        _until(lambda: len(acknowledged) >= 20, "ingest under way")
        backup = _cli_json(home, "db", "backup")["backup"]
        done_at_backup = len(acknowledged)
        time.sleep(1.0)
    finally:
        stop.set()
        writer.join(60)
        terminate(api.proc)
    assert failures == []
    assert len(acknowledged) > done_at_backup, "ingest ran on through the backup"

    restored = _cli_json(home, "db", "restore", "--until", backup["restorable_from"])
    assert restored["from_backup"] == backup["label"]
    assert memory_here(home, "db", "start").returncode == 0
    try:
        with psycopg.connect(home_url(home)) as conn:
            rows = conn.execute(
                "SELECT split_part(event_id, '-', 1), count(*) FROM dw_chat_events"
                " WHERE org_id = 'acme' GROUP BY 1"
            ).fetchall()
    finally:
        memory_here(home, "db", "stop")
    batches = {int(name[1:]): count for name, count in rows}
    assert set(batches.values()) == {BATCH}, "a batch restored in part"
    assert set(range(20)) <= set(batches), "a batch acknowledged before the backup is missing"
    assert set(batches) == set(range(len(batches))), "batches restored out of order"
