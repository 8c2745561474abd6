-- History search indexes (docs/adr/0134, 0141): a build that failed is recorded (and tried
-- again later) instead of looping; an index whose org shrank below the drop line is marked
-- 'dropping' in the transaction that deleted the windows, and the builder drops it
-- (DROP INDEX CONCURRENTLY) and forgets the request.
ALTER TABLE dw_window_indexes DROP CONSTRAINT dw_window_indexes_state_check;
ALTER TABLE dw_window_indexes ADD CONSTRAINT dw_window_indexes_state_check
    CHECK (state IN ('wanted', 'building', 'ready', 'failed', 'dropping'));
-- Builds that failed since the index was last ready, the last one's error (its class and
-- SQLSTATE only: a message may quote data) and when.
ALTER TABLE dw_window_indexes ADD COLUMN failures integer NOT NULL DEFAULT 0;
ALTER TABLE dw_window_indexes ADD COLUMN last_error text;
ALTER TABLE dw_window_indexes ADD COLUMN failed_at timestamptz;
