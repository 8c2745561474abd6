"""memory: local, multilingual semantic memory on PostgreSQL + pgvector."""
