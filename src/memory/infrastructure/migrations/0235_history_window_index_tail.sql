-- The sweep writes a large org's new windows outside its search indexes (docs/adr/0153):
-- a window with `index_pending` is in its org's tail, which search scans exactly beside the
-- graph walk, and the index builder merges it into the org's HNSW indexes (an update that
-- clears the flag) off the sweep's path. The org's partial HNSW indexes hold only windows
-- without the flag (their predicate says `NOT index_pending`). Existing rows need no merge:
-- the constant default is a catalog change, no rewrite.
ALTER TABLE dw_message_embeddings ADD COLUMN index_pending boolean NOT NULL DEFAULT false;
-- The tails: each org's is bounded (TAIL_WINDOWS), so this index stays small; search reads
-- a group's tail through it and the merger its next batch.
CREATE INDEX dw_message_embeddings_tail_idx
    ON dw_message_embeddings (org_id, model, script_group) WHERE index_pending;
-- Indexes built before this migration lack `NOT index_pending` in their predicate: the
-- tail's exact scan could be planned as a filtered walk of them. They are built again (the
-- builder drops an index of the same name first; the org's searches are exact meanwhile).
UPDATE dw_window_indexes SET state = 'wanted', ready_at = NULL WHERE state = 'ready';
