-- The org's sweep totals (migration 0210) follow a slice's visits once per statement instead
-- of once per row (docs/adr/0149): the sweep records a slice's visits (up to 128 partitions,
-- most of one org) in one statement, and a row trigger updated the org's one totals row once
-- per partition, each update a new version of the same row in the same transaction.
-- The sums are the same: a statement's inserted states are added, its updated states add
-- their new figures and take back their old ones, per org and model, in key order (two
-- sweepers recording slices of the same orgs lock the totals rows in one order).
DROP TRIGGER dw_org_sweep_totals_visited ON dw_sweep_partition_state;
DROP FUNCTION dw_org_sweep_totals_visit();

CREATE FUNCTION dw_org_sweep_totals_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO dw_org_sweep_totals AS t (
            org_id, model, partitions, windows_embedded, open_windows, poison_windows,
            poison_events, stalled, swept_at, embedded_at)
        SELECT org_id, model, count(*), sum(windows_embedded), sum(open_windows),
               sum(poison_windows), sum(poison_events), count(*) FILTER (WHERE stalled),
               max(swept_at), max(embedded_at)
        FROM added GROUP BY org_id, model ORDER BY org_id, model
        ON CONFLICT (org_id, model) DO UPDATE SET
            partitions = t.partitions + EXCLUDED.partitions,
            windows_embedded = t.windows_embedded + EXCLUDED.windows_embedded,
            open_windows = t.open_windows + EXCLUDED.open_windows,
            poison_windows = t.poison_windows + EXCLUDED.poison_windows,
            poison_events = t.poison_events + EXCLUDED.poison_events,
            stalled = t.stalled + EXCLUDED.stalled,
            swept_at = greatest(t.swept_at, EXCLUDED.swept_at),
            embedded_at = greatest(t.embedded_at, EXCLUDED.embedded_at);
        RETURN NULL;
    END IF;
    -- An update: per org and model, the new figures less the old ones (an update that moves
    -- a row to another org or model, which the service never does, moves its figures).
    INSERT INTO dw_org_sweep_totals AS t (
        org_id, model, partitions, windows_embedded, open_windows, poison_windows,
        poison_events, stalled, swept_at, embedded_at)
    SELECT org_id, model, sum(n), sum(windows_embedded), sum(open_windows),
           sum(poison_windows), sum(poison_events), sum(stalled), max(swept_at),
           max(embedded_at)
    FROM (
        SELECT org_id, model, 1 AS n, windows_embedded, open_windows, poison_windows,
               poison_events, stalled::integer AS stalled, swept_at, embedded_at
        FROM updated_new
        UNION ALL
        SELECT org_id, model, -1, -windows_embedded, -open_windows, -poison_windows,
               -poison_events, -(stalled::integer), NULL, NULL
        FROM updated_old
    ) AS d
    GROUP BY org_id, model ORDER BY org_id, model
    ON CONFLICT (org_id, model) DO UPDATE SET
        partitions = t.partitions + EXCLUDED.partitions,
        windows_embedded = t.windows_embedded + EXCLUDED.windows_embedded,
        open_windows = t.open_windows + EXCLUDED.open_windows,
        poison_windows = t.poison_windows + EXCLUDED.poison_windows,
        poison_events = t.poison_events + EXCLUDED.poison_events,
        stalled = t.stalled + EXCLUDED.stalled,
        swept_at = greatest(t.swept_at, EXCLUDED.swept_at),
        embedded_at = greatest(t.embedded_at, EXCLUDED.embedded_at);
    DELETE FROM dw_org_sweep_totals AS t
    USING (SELECT DISTINCT org_id, model FROM updated_old) AS g
    WHERE t.org_id = g.org_id AND t.model = g.model AND t.partitions <= 0;
    RETURN NULL;
END
$$;

CREATE TRIGGER dw_org_sweep_totals_inserted AFTER INSERT ON dw_sweep_partition_state
    REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION dw_org_sweep_totals_add();
CREATE TRIGGER dw_org_sweep_totals_updated AFTER UPDATE ON dw_sweep_partition_state
    REFERENCING OLD TABLE AS updated_old NEW TABLE AS updated_new
    FOR EACH STATEMENT EXECUTE FUNCTION dw_org_sweep_totals_add();
