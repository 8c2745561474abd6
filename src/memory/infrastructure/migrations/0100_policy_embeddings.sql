-- Policy memory's read model: one row per (policy, model), maintained by the projection
-- (memory.infrastructure.policy.view). The event log (table `policy_events`, created by the
-- eventsourcing library) is the source of truth; this table can be rebuilt from it.
CREATE TABLE IF NOT EXISTS policy_embeddings (
    embedding_ref  uuid          NOT NULL,  -- uuid5(aggregate id): stable across rebuilds
    model          text          NOT NULL,  -- identity of the model that made `embedding`
    policy_id      text          NOT NULL,
    version        integer       NOT NULL,  -- aggregate version this row reflects
    -- FixedDimensionality: 384 dims, half precision (docs/adr/0023).
    embedding      halfvec(384)  NOT NULL,
    title          text,
    source         text,
    tags           text[]        NOT NULL DEFAULT '{}',
    metadata       jsonb         NOT NULL DEFAULT '{}',  -- the full metadata object as given
    content        text          NOT NULL,
    content_sha256 text          NOT NULL,
    created_at     timestamptz   NOT NULL,  -- when the policy was first stored
    updated_at     timestamptz   NOT NULL,  -- when its current version was recorded
    PRIMARY KEY (embedding_ref, model),
    UNIQUE (model, policy_id)
);

-- 776 bytes per vector: keep it inline and uncompressed, never de-TOASTed per comparison.
ALTER TABLE policy_embeddings ALTER COLUMN embedding SET STORAGE PLAIN;

-- Metadata filters. The HNSW index is per model and is created when a model's projection
-- first starts (partial index `WHERE model = '<id>'`, see memory.infrastructure.policy.indexes).
CREATE INDEX IF NOT EXISTS policy_embeddings_tags_idx
    ON policy_embeddings USING gin (tags);
CREATE INDEX IF NOT EXISTS policy_embeddings_metadata_idx
    ON policy_embeddings USING gin (metadata jsonb_path_ops);
CREATE INDEX IF NOT EXISTS policy_embeddings_source_idx
    ON policy_embeddings (model, source);
CREATE INDEX IF NOT EXISTS policy_embeddings_title_idx
    ON policy_embeddings (model, title);
CREATE INDEX IF NOT EXISTS policy_embeddings_updated_at_idx
    ON policy_embeddings (model, updated_at);

-- Secret keys of this database's policy service (HMAC of search cursors), generated once so
-- that every process serving this database issues and accepts the same cursors.
CREATE TABLE IF NOT EXISTS policy_secrets (
    name   text  PRIMARY KEY,
    secret bytea NOT NULL
);
INSERT INTO policy_secrets (name, secret)
VALUES ('search_cursor', uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()))
ON CONFLICT (name) DO NOTHING;
