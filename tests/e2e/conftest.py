"""End-to-end fixtures shared by several folders."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.conftest import ClonedDatabases
from tests.e2e.processes import served_on

from memory.infrastructure.postgres.embedded import with_database


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
