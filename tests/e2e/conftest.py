"""End-to-end fixtures shared by several folders."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import ClonedDatabases
from tests.e2e.drills import seeded_home
from tests.e2e.processes import served_on

from memory.infrastructure.postgres.embedded import EmbeddedPostgres, free_port, with_database


@pytest.fixture(scope="module")
def served(
    pg_admin_url: str,
    cloned_databases: ClonedDatabases,
    tmp_path_factory: pytest.TempPathFactory,
    request: pytest.FixtureRequest,
) -> Iterator[str]:
    """A real `memory serve` (`served_on`) on a database of its own, shared by the tests of
    one module; its base URL."""
    name = cloned_databases.take()
    try:
        url = with_database(pg_admin_url, name)
        home = tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1])
        with served_on(url, home) as base:
            yield base
    finally:
        cloned_databases.drop(name)


@pytest.fixture
def cluster(cluster_home: Path) -> Iterator[EmbeddedPostgres]:
    """tests/conftest.py's `cluster` (a cluster of the test's own, to stop and start, on a
    fixed port), copied from a created one instead of made by initdb (`seeded_home`): the
    e2e drills that stop PostgreSQL under a server are not about creating it."""
    cluster = EmbeddedPostgres(seeded_home(cluster_home / "pg"), durable=False, port=free_port())
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()
