"""Policy memory on PostgreSQL: the event store (eventsourcing), the projection's view and
runner, the read model's queries, and the per-model objects they share."""
