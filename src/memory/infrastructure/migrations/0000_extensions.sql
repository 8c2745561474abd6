-- pgvector is required by both read models. The embedded cluster creates it as superuser;
-- on an external database an administrator may have to create it once.
CREATE EXTENSION IF NOT EXISTS vector;
