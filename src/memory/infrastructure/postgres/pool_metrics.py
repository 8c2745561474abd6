"""Connection pool gauges, read from psycopg_pool's own statistics at scrape time.

The pools register themselves under a fixed name (`service`, ...), so the label set stays
small however many pools a process has opened and closed over its life.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import REGISTRY, Collector
from psycopg_pool import ConnectionPool


class PoolCollector(Collector):
    """Connections in use, idle and the requests waiting for one, per registered pool."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pools: dict[str, ConnectionPool[Any]] = {}

    def register(self, name: str, pool: ConnectionPool[Any]) -> None:
        with self._lock:
            self._pools[name] = pool

    def unregister(self, name: str, pool: ConnectionPool[Any]) -> None:
        with self._lock:
            if self._pools.get(name) is pool:
                del self._pools[name]

    def collect(self) -> Iterator[GaugeMetricFamily]:
        connections = GaugeMetricFamily(
            "memory_db_pool_connections",
            "Connections of a database pool, by state (in_use, idle)",
            labels=["pool", "state"],
        )
        waiting = GaugeMetricFamily(
            "memory_db_pool_requests_waiting",
            "Requests waiting for a connection of a database pool",
            labels=["pool"],
        )
        limit = GaugeMetricFamily(
            "memory_db_pool_max_connections", "Most connections a pool opens", labels=["pool"]
        )
        with self._lock:
            pools = list(self._pools.items())
        for name, pool in pools:
            stats = pool.get_stats()
            size = stats.get("pool_size", 0)
            idle = stats.get("pool_available", 0)
            connections.add_metric([name, "in_use"], max(size - idle, 0))
            connections.add_metric([name, "idle"], idle)
            waiting.add_metric([name], stats.get("requests_waiting", 0))
            limit.add_metric([name], pool.max_size)
        yield connections
        yield waiting
        yield limit


POOLS = PoolCollector()
REGISTRY.register(POOLS)
