-- The console's last-hour trends (docs/adr/0122): per org and minute, what the history
-- searches and the sweep passes of every replica did. Each replica adds its tallies every
-- few seconds in one statement (never one write per search); minutes older than the trend
-- are deleted by the same statement's transaction, so the table holds about an hour of the
-- orgs that were active in it. `org_id` '' holds the whole service's figures (no org id is
-- empty). Counts only: no query, no chat text.
CREATE TABLE dw_activity_minutes (
    org_id text COLLATE "C" NOT NULL,
    minute timestamptz NOT NULL,
    searches bigint NOT NULL DEFAULT 0,
    semantic bigint NOT NULL DEFAULT 0,
    degraded bigint NOT NULL DEFAULT 0,
    windows_embedded bigint NOT NULL DEFAULT 0,
    -- The largest age of the oldest work waiting for the sweep that a pass ending in the
    -- minute saw (NULL: no pass ended in it, or none could tell for this org).
    lag_age_seconds double precision,
    PRIMARY KEY (org_id, minute)
);

-- Forgetting old minutes is a range of this index, however many orgs there are.
CREATE INDEX dw_activity_minutes_minute_idx ON dw_activity_minutes (minute);
