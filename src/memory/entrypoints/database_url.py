"""Which database an entrypoint uses: `MEMORY_DATABASE_URL`, or the home's embedded cluster."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from memory.infrastructure.postgres.embedded import EmbeddedPostgres
from memory.infrastructure.settings import Settings


@contextmanager
def database_url(settings: Settings) -> Iterator[str]:
    """Yield a URL. With no configured database, start (or attach to) the embedded cluster
    under `settings.home` and stop it afterwards if this process started it."""
    if settings.database_url:
        yield settings.database_url
        return
    cluster = EmbeddedPostgres(settings.home)
    try:
        yield cluster.start()
    finally:
        cluster.stop()
