"""Prometheus metrics of policy memory (served at /metrics with everything else)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from memory.application.embedding import EmbeddingError, ModelUnavailable
from memory.application.errors import DatabaseUnavailable, DeadlineExceeded
from memory.application.observer import ServiceCall
from memory.application.policy.commands import StoreReceipt
from memory.application.policy.leadership import ProjectorStatus
from memory.application.policy.queries import SearchAnswer
from memory.domain.errors import AlreadyExists, DomainError, InvalidInput, NotFound

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

COMMAND_OPERATIONS = frozenset({"store", "store_many", "update"})


def outcome_of(error: Exception | None) -> str:
    """The `outcome` label of a call: ok, or the kind of error it raised."""
    if error is None:
        return "ok"
    outcomes: list[tuple[type[Exception], str]] = [
        (AlreadyExists, "conflict"),
        (NotFound, "not_found"),
        (InvalidInput, "invalid"),
        (DeadlineExceeded, "timeout"),
        (DatabaseUnavailable, "database_unavailable"),
        (ModelUnavailable, "model_unavailable"),
        (EmbeddingError, "model_error"),
        (DomainError, "invalid"),
    ]
    for cls, outcome in outcomes:
        if isinstance(error, cls):
            return outcome
    return "error"


class PolicyMetrics:
    """`ServiceObserver` that turns `PolicyService` calls into the metrics above."""

    def observe(self, call: ServiceCall) -> None:
        outcome = outcome_of(call.error)
        if call.operation in COMMAND_OPERATIONS:
            command = "store" if call.operation == "store_many" else call.operation
            POLICY_COMMANDS.labels(command, outcome).inc()
            if call.ok:
                POLICY_COMMAND_SECONDS.labels(command).observe(call.seconds)
                receipts = call.result if isinstance(call.result, list) else [call.result]
                for receipt in receipts:
                    if isinstance(receipt, StoreReceipt) and not receipt.searchable:
                        POLICY_NOT_SEARCHABLE.inc()
        elif call.operation == "search":
            POLICY_SEARCHES.labels(outcome).inc()
            answer = call.result
            if isinstance(answer, SearchAnswer):
                POLICY_SEARCH_SECONDS.labels("total").observe(call.seconds)
                POLICY_SEARCH_SECONDS.labels("embed").observe(answer.embed_seconds)
                POLICY_SEARCH_SECONDS.labels("database").observe(answer.database_seconds)
        elif call.operation == "projector_check" and isinstance(call.result, ProjectorStatus):
            # The worker checks the running projection every second: its lag, as it saw it.
            status = call.result
            POLICY_PROJECTOR_LAG.labels(status.model).set(status.lag_events)
            POLICY_PROJECTOR_POSITION.labels(status.model).set(status.position or 0)
