-- History search: embeddings of conversation windows, a regenerable cache written only by
-- the sweep (seed decision "Digital Worker local embeddings for semantic history search").
-- One table holds every model's rows: `embedding` has no fixed
-- dimension (384 for the embedded e5, 1024 for bge-m3) and every query filters by
-- (org_id, model), so vectors of two models are never compared.
CREATE TABLE dw_message_embeddings (
    id uuid PRIMARY KEY, -- deterministic window id: a re-run overwrites its own row
    org_id text NOT NULL,
    provider text NOT NULL,
    external_channel_id text NOT NULL,
    model text NOT NULL,
    embedding halfvec NOT NULL,
    content text NOT NULL, -- the exact chunk text that was embedded
    source_event_ids text[] NOT NULL,
    first_occurred_at timestamptz NOT NULL,
    last_occurred_at timestamptz NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- Keep vectors inline: a halfvec(1024) is over the TOAST threshold, and de-TOASTing each
-- one made exact scans ~4-10x slower (see docs/adr/0034).
ALTER TABLE dw_message_embeddings ALTER COLUMN embedding SET STORAGE PLAIN;

-- Exact KNN over an org's rows of one model; no ANN index (docs/adr/0034).
CREATE INDEX dw_message_embeddings_org_model_idx ON dw_message_embeddings (org_id, model);
-- Which windows cover an event: re-runs replace overlapping windows.
CREATE INDEX dw_message_embeddings_sources_idx
    ON dw_message_embeddings USING gin (source_event_ids);
