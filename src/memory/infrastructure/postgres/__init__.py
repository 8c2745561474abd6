"""PostgreSQL access shared by both contexts: the embedded cluster, the pool, migrations."""
