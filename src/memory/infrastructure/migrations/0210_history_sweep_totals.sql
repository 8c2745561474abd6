-- Org totals for the sweep status and the org directory at any number of partitions
-- (docs/adr/0093): counts kept by triggers in the transactions that change their sources,
-- so that reading an org's totals is one row, never a scan or a loop over its partitions.

-- The org's partitions, counted (dw_orgs, migration 0206, holds its messages the same way).
-- One statement-level trigger per statement that adds or deletes partitions, one row update
-- per org it touched, under the org's directory lock like every other dw_orgs write.
ALTER TABLE dw_orgs ADD COLUMN partitions bigint NOT NULL DEFAULT 0;

CREATE FUNCTION dw_orgs_count_partitions_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM dw_orgs_lock(c.org_id) FROM (SELECT DISTINCT org_id FROM added ORDER BY 1) AS c;
    INSERT INTO dw_orgs AS o (org_id, partitions)
    SELECT org_id, count(*) FROM added GROUP BY org_id
    ON CONFLICT (org_id) DO UPDATE SET partitions = o.partitions + EXCLUDED.partitions;
    RETURN NULL;
END
$$;

-- The org's row may be gone already (dw_orgs_forget ran first): nothing to count then.
CREATE FUNCTION dw_orgs_count_partitions_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM dw_orgs_lock(c.org_id) FROM (SELECT DISTINCT org_id FROM removed ORDER BY 1) AS c;
    UPDATE dw_orgs AS o SET partitions = o.partitions - r.n
    FROM (SELECT org_id, count(*) AS n FROM removed GROUP BY org_id) AS r
    WHERE o.org_id = r.org_id;
    RETURN NULL;
END
$$;

CREATE TRIGGER dw_orgs_partitions_added AFTER INSERT ON dw_chat_partitions
    REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION dw_orgs_count_partitions_added();
CREATE TRIGGER dw_orgs_partitions_removed AFTER DELETE ON dw_chat_partitions
    REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION dw_orgs_count_partitions_removed();

-- Per org and model, the sums of dw_sweep_partition_state (what the sweep's last visit of
-- each partition left): how many partitions it has visited, the windows they embedded, hold
-- open and poisoned, how many are stalled, and the latest visit and embedding. A row exists
-- while the org has at least one partition state for the model.
CREATE TABLE dw_org_sweep_totals (
    org_id text NOT NULL,
    model text NOT NULL,
    partitions bigint NOT NULL,
    windows_embedded bigint NOT NULL,
    open_windows bigint NOT NULL,
    poison_windows bigint NOT NULL,
    poison_events bigint NOT NULL,
    stalled bigint NOT NULL,
    swept_at timestamptz,
    embedded_at timestamptz,
    PRIMARY KEY (org_id, model)
);

-- A visit's upsert changes one state row: its difference is added to the org's totals row
-- in the same transaction. The sweep writes one org's states under the org's shared
-- retention lock, and only for the active model; erasure (exclusive lock) and model drops
-- (another model) delete them in one statement each: one lock order, no deadlock. An update
-- that moves a row to another org or model (the service never does) moves its figures.
CREATE FUNCTION dw_org_sweep_totals_visit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND (OLD.org_id, OLD.model) = (NEW.org_id, NEW.model) THEN
        UPDATE dw_org_sweep_totals AS t SET
            windows_embedded = t.windows_embedded + NEW.windows_embedded - OLD.windows_embedded,
            open_windows = t.open_windows + NEW.open_windows - OLD.open_windows,
            poison_windows = t.poison_windows + NEW.poison_windows - OLD.poison_windows,
            poison_events = t.poison_events + NEW.poison_events - OLD.poison_events,
            stalled = t.stalled + NEW.stalled::integer - OLD.stalled::integer,
            swept_at = greatest(t.swept_at, NEW.swept_at),
            embedded_at = greatest(t.embedded_at, NEW.embedded_at)
        WHERE t.org_id = NEW.org_id AND t.model = NEW.model;
        RETURN NULL;
    END IF;
    IF TG_OP = 'UPDATE' THEN
        UPDATE dw_org_sweep_totals AS t SET
            partitions = t.partitions - 1,
            windows_embedded = t.windows_embedded - OLD.windows_embedded,
            open_windows = t.open_windows - OLD.open_windows,
            poison_windows = t.poison_windows - OLD.poison_windows,
            poison_events = t.poison_events - OLD.poison_events,
            stalled = t.stalled - OLD.stalled::integer
        WHERE t.org_id = OLD.org_id AND t.model = OLD.model;
        DELETE FROM dw_org_sweep_totals AS t
        WHERE t.org_id = OLD.org_id AND t.model = OLD.model AND t.partitions <= 0;
    END IF;
    INSERT INTO dw_org_sweep_totals AS t (
        org_id, model, partitions, windows_embedded, open_windows, poison_windows,
        poison_events, stalled, swept_at, embedded_at)
    VALUES (NEW.org_id, NEW.model, 1, NEW.windows_embedded, NEW.open_windows,
            NEW.poison_windows, NEW.poison_events, NEW.stalled::integer, NEW.swept_at,
            NEW.embedded_at)
    ON CONFLICT (org_id, model) DO UPDATE SET
        partitions = t.partitions + 1,
        windows_embedded = t.windows_embedded + EXCLUDED.windows_embedded,
        open_windows = t.open_windows + EXCLUDED.open_windows,
        poison_windows = t.poison_windows + EXCLUDED.poison_windows,
        poison_events = t.poison_events + EXCLUDED.poison_events,
        stalled = t.stalled + EXCLUDED.stalled,
        swept_at = greatest(t.swept_at, EXCLUDED.swept_at),
        embedded_at = greatest(t.embedded_at, EXCLUDED.embedded_at);
    RETURN NULL;
END
$$;

-- Deletes come in bulk (an org's erasure, a model's drop): one statement per delete, one row
-- per (org, model) it touched. The latest visit and embedding of the states left stay as
-- they were (a maximum cannot be taken back without a scan); a group left empty goes.
CREATE FUNCTION dw_org_sweep_totals_forget() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE dw_org_sweep_totals AS t SET
        partitions = t.partitions - g.partitions,
        windows_embedded = t.windows_embedded - g.windows_embedded,
        open_windows = t.open_windows - g.open_windows,
        poison_windows = t.poison_windows - g.poison_windows,
        poison_events = t.poison_events - g.poison_events,
        stalled = t.stalled - g.stalled
    FROM (SELECT org_id, model, count(*) AS partitions,
                 sum(windows_embedded) AS windows_embedded, sum(open_windows) AS open_windows,
                 sum(poison_windows) AS poison_windows, sum(poison_events) AS poison_events,
                 count(*) FILTER (WHERE stalled) AS stalled
          FROM removed GROUP BY org_id, model) AS g
    WHERE t.org_id = g.org_id AND t.model = g.model;
    DELETE FROM dw_org_sweep_totals AS t
    USING (SELECT DISTINCT org_id, model FROM removed) AS g
    WHERE t.org_id = g.org_id AND t.model = g.model AND t.partitions <= 0;
    RETURN NULL;
END
$$;

CREATE TRIGGER dw_org_sweep_totals_visited AFTER INSERT OR UPDATE ON dw_sweep_partition_state
    FOR EACH ROW EXECUTE FUNCTION dw_org_sweep_totals_visit();
CREATE TRIGGER dw_org_sweep_totals_removed AFTER DELETE ON dw_sweep_partition_state
    REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION dw_org_sweep_totals_forget();

-- What exists already, counted under table locks held until the migration commits (no
-- write is counted twice or missed between the triggers' creation and these counts).
LOCK TABLE dw_chat_partitions, dw_sweep_partition_state IN SHARE ROW EXCLUSIVE MODE;
UPDATE dw_orgs AS o SET partitions = c.n
FROM (SELECT org_id, count(*) AS n FROM dw_chat_partitions GROUP BY org_id) AS c
WHERE o.org_id = c.org_id COLLATE "C";
INSERT INTO dw_org_sweep_totals (
    org_id, model, partitions, windows_embedded, open_windows, poison_windows, poison_events,
    stalled, swept_at, embedded_at)
SELECT org_id, model, count(*), sum(windows_embedded), sum(open_windows), sum(poison_windows),
       sum(poison_events), count(*) FILTER (WHERE stalled), max(swept_at), max(embedded_at)
FROM dw_sweep_partition_state GROUP BY org_id, model;
