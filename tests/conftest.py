"""Shared fixtures: one real PostgreSQL + pgvector cluster per test session, and a fresh
database per test cloned from a template that already has the `vector` extension."""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from psycopg import sql
from starlette.applications import Starlette

from memory.infrastructure.postgres.embedded import (
    EmbeddedPostgres,
    create_database,
    with_database,
)
from memory.infrastructure.settings import Settings

TEMPLATE_DB = "memory_test_template"


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


@pytest.fixture(scope="session")
def pg_admin_url() -> Iterator[str]:
    home = _server_reachable_dir()
    cluster = EmbeddedPostgres(home, durable=False)
    url = cluster.start()
    create_database(url, TEMPLATE_DB)
    try:
        yield url
    finally:
        cluster.stop()
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def database_url(pg_admin_url: str) -> Iterator[str]:
    """A fresh, empty database (with pgvector) for one test; dropped afterwards."""
    name = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(name), sql.Identifier(TEMPLATE_DB)
            )
        )
    try:
        yield with_database(pg_admin_url, name)
    finally:
        with psycopg.connect(pg_admin_url, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


@pytest.fixture
def make_settings(tmp_path: Path) -> Callable[..., Settings]:
    """Settings as a test wants them: hash models by default, no environment leakage."""

    def make(**overrides: Any) -> Settings:
        values: dict[str, Any] = {
            "home": tmp_path / "home",
            "policy_model": "hash:384",
            "history_model": "hash:1024",
        }
        values.update(overrides)
        return Settings(**values)

    return make


@asynccontextmanager
async def running_app(
    app: Starlette, *, raise_app_exceptions: bool = True
) -> AsyncIterator[httpx.AsyncClient]:
    """Run the app's lifespan (start-up, workers, shutdown) around an in-process client.
    With `raise_app_exceptions=False` an unhandled error is the 500 a client would see."""
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=raise_app_exceptions)
        async with httpx.AsyncClient(transport=transport, base_url="http://memory.test") as client:
            yield client
