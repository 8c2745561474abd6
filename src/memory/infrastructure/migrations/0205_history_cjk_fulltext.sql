-- History full-text search that works for Chinese (docs/adr/0050, 0051). The tsvector is now
-- written by ingest from the message's segmented text (CJK runs cut into bigrams in Python,
-- memory.domain.history.full_text), so it can no longer be generated from message_text.
-- DROP EXPRESSION keeps every existing value: old rows stay searchable as before until
-- `memory history reindex` re-indexes them (it picks rows whose search_segmentation differs
-- from the code's, so it can stop and resume at any point).
ALTER TABLE dw_chat_events ALTER COLUMN search_tsv DROP EXPRESSION;

-- 0: to_tsvector('simple', message_text) as before; 1: CJK bigrams. Ingest always says which
-- one it used; the default marks rows from any other writer for re-indexing.
ALTER TABLE dw_chat_events ADD COLUMN search_segmentation smallint NOT NULL DEFAULT 0;

-- A writer that does not segment (a hand-written INSERT, an older process during a rolling
-- upgrade) still gets the index such rows always had, marked as segmentation 0.
CREATE FUNCTION dw_chat_events_default_tsv() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.search_tsv := to_tsvector('simple', NEW.message_text);
    NEW.search_segmentation := 0;
    RETURN NEW;
END
$$;

CREATE TRIGGER dw_chat_events_default_tsv
    BEFORE INSERT ON dw_chat_events
    FOR EACH ROW WHEN (NEW.search_tsv IS NULL)
    EXECUTE FUNCTION dw_chat_events_default_tsv();

ALTER TABLE dw_chat_events ALTER COLUMN search_tsv SET NOT NULL;
