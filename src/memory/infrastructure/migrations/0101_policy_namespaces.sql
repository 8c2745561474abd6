-- Policy namespaces (docs/adr/0102): a row belongs to the global namespace ('global') or to
-- one org's ('org:<org_id>'). Every row before this migration is a global policy's.
ALTER TABLE policy_embeddings ADD COLUMN namespace text NOT NULL DEFAULT 'global';

-- A policy id is unique per namespace, no longer per model alone.
ALTER TABLE policy_embeddings DROP CONSTRAINT policy_embeddings_model_policy_id_key;
ALTER TABLE policy_embeddings
    ADD CONSTRAINT policy_embeddings_model_namespace_policy_id_key
    UNIQUE (model, namespace, policy_id);

-- A listing reads one or two namespaces newest first: per namespace an index range in
-- (updated_at, embedding_ref) order, merged, instead of sorting every row of the model.
-- The search keeps the model's partial HNSW index; `namespace = ANY(...)` filters its
-- candidates (iterative scan keeps walking when it rejects them).
CREATE INDEX policy_embeddings_namespace_updated_idx
    ON policy_embeddings (model, namespace, updated_at DESC, embedding_ref DESC);
