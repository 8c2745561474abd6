-- The sweep looks up the windows that cover a batch's events through this index once per
-- batch (the replacement of overlapping windows, docs/adr/0115) and writes the batch's
-- windows right after. With GIN's default `fastupdate`, new entries wait in an unsorted
-- pending list until it reaches `gin_pending_list_limit` (4 MB) or a vacuum merges it, and
-- every lookup scans the whole list: 30-45 ms per batch of 16 windows, growing with what
-- was written since the last merge, so the throughput depended on which org had been swept
-- just before (docs/adr/0136). Entries now go straight into the index; what waits in the
-- list is merged now.
ALTER INDEX dw_message_embeddings_sources_idx SET (fastupdate = off);
SELECT gin_clean_pending_list('dw_message_embeddings_sources_idx'::regclass);
