"""What the benchmarks share: the private PostgreSQL cluster a benchmark runs in (a
temporary home, not durable: no fsync, the benchmarks measure the service, not the disk;
removed afterwards), and the timing of repeated calls."""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from memory.infrastructure.postgres.embedded import EmbeddedPostgres, create_database


@contextmanager
def cluster(name: str) -> Iterator[str]:
    """The URL of database `name` (with pgvector) in a new cluster that lives as long as the
    context."""
    home = Path(tempfile.mkdtemp(prefix=f"memory-bench-{name}-"))
    home.chmod(0o755)
    pg = EmbeddedPostgres(home, durable=False)
    try:
        yield create_database(pg.start(), f"{name}_bench")
    finally:
        pg.stop()
        shutil.rmtree(home, ignore_errors=True)


def timed_ms(fn: Callable[[], object], repeats: int) -> list[float]:
    """`fn`'s time in milliseconds, `repeats` times, after one call that is not timed (a
    first call's connections, plans and caches are not what is measured)."""
    fn()
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    return samples
