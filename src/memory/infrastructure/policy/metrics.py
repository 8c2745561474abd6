"""Prometheus metrics of policy memory (served at /metrics with everything else)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10)

POLICY_COMMANDS = Counter(
    "memory_policy_commands_total",
    "Policy store/update commands by outcome",
    ["command", "outcome"],
)
POLICY_COMMAND_SECONDS = Histogram(
    "memory_policy_command_seconds",
    "Policy store/update latency, including embedding and the read-your-writes wait",
    ["command"],
    buckets=LATENCY_BUCKETS,
)
POLICY_SEARCHES = Counter("memory_policy_searches_total", "Policy searches by outcome", ["outcome"])
POLICY_SEARCH_SECONDS = Histogram(
    "memory_policy_search_seconds",
    "Policy search latency by stage (embed = the query, database = the SQL)",
    ["stage"],
    buckets=LATENCY_BUCKETS,
)
POLICY_PROJECTOR_LAG = Gauge(
    "memory_policy_projector_lag_events",
    "Events recorded but not yet projected for the active model",
    ["model"],
)
POLICY_PROJECTOR_POSITION = Gauge(
    "memory_policy_projector_position",
    "Notification id up to which the active model's projection is done",
    ["model"],
)
POLICY_NOT_SEARCHABLE = Counter(
    "memory_policy_writes_not_yet_searchable_total",
    "Writes answered before the projection caught up (projection_wait_timeout exceeded)",
)
