"""Which database an entrypoint uses: `MEMORY_DATABASE_URL`, or the home's embedded cluster."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from psycopg.conninfo import make_conninfo

from memory.infrastructure.postgres.embedded import EmbeddedPostgres
from memory.infrastructure.settings import Settings


class HomeHasNoDatabase(Exception):
    """An operator command found no cluster under MEMORY_HOME: creating an empty one there
    would only hide that it runs against the wrong home."""

    def __init__(self, home: Path) -> None:
        super().__init__(
            f"no database under MEMORY_HOME={home}: run `memory serve` (or `memory demo`) "
            "there first, or set MEMORY_HOME to the home that has the data, or "
            "MEMORY_DATABASE_URL to the database"
        )


def embedded_cluster(settings: Settings, *, port: int | None = None) -> EmbeddedPostgres:
    """The home's embedded cluster, archiving into the configured backup repository."""
    return EmbeddedPostgres(
        settings.home,
        port=port,
        repository=settings.backup_repository,
        synchronous_standby=settings.database_synchronous_standby,
    )


def with_password(url: str, settings: Settings) -> str:
    """`url` with `MEMORY_DATABASE_PASSWORD` in it when that is set."""
    if settings.database_password is None:
        return url
    return make_conninfo(url, password=settings.database_password.get_secret_value())


@contextmanager
def database_url(settings: Settings, *, create: bool = True) -> Iterator[str]:
    """Yield a URL. With no configured database, start (or attach to) the embedded cluster
    under `settings.home` and stop it afterwards if this process started it. With
    `create=False` a home without a cluster raises `HomeHasNoDatabase`."""
    if settings.database_url:
        yield with_password(settings.database_url, settings)
        return
    cluster = embedded_cluster(settings)
    if not create and not cluster.initialised():
        raise HomeHasNoDatabase(settings.home)
    try:
        cluster.start()
        # The service's own role, not the cluster's superuser (docs/adr/0101).
        yield cluster.service_url
    finally:
        cluster.stop()
