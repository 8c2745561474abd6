"""PostgreSQL adapters of the history context."""
