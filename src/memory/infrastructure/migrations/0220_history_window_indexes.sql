-- History search past the exact scan (docs/adr/0134): an org with many windows of one model
-- gets a partial HNSW index of its own,
--   USING hnsw ((embedding::halfvec(<dims>)) halfvec_cosine_ops)
--   WHERE org_id = '<org>' AND model = '<model>',
-- built at runtime (CREATE INDEX CONCURRENTLY) once a search saw the org pass the threshold.
-- This table says which orgs have one and how far its build got; search uses an index only
-- once it is 'ready'.
CREATE TABLE dw_window_indexes (
    org_id text NOT NULL,
    model text NOT NULL,
    index_name text NOT NULL UNIQUE,
    state text NOT NULL DEFAULT 'wanted' CHECK (state IN ('wanted', 'building', 'ready')),
    -- The model's vector size: the index is on the cast to halfvec(dimensions).
    dimensions integer,
    -- How many windows the search that asked for the index saw.
    windows_seen bigint NOT NULL,
    requested_at timestamptz NOT NULL DEFAULT now(),
    started_at timestamptz,
    ready_at timestamptz,
    -- Build progress (pg_stat_progress_create_index), refreshed while it runs.
    phase text,
    tuples_done bigint,
    tuples_total bigint,
    PRIMARY KEY (org_id, model)
);

-- The builder's queue: only indexes not yet ready.
CREATE INDEX dw_window_indexes_pending_idx
    ON dw_window_indexes (requested_at) WHERE state <> 'ready';

-- The index path estimates a query's similarity distribution from a fixed sample of the
-- org's windows: the first ones in id order (deterministic uuids, effectively random). The
-- same btree serves the exact scan's (org_id, model) range, so it replaces that index.
CREATE INDEX dw_message_embeddings_org_model_id_idx
    ON dw_message_embeddings (org_id, model, id);
DROP INDEX dw_message_embeddings_org_model_idx;
