-- The org directory's lag (docs/adr/0093): since when an org's oldest work ready now has
-- waited, as the first entry of this index (a min over the org's rows of the sweep's work
-- state, migration 0207, answered by one index probe instead of a scan of its partitions).
CREATE INDEX dw_sweep_work_waiting_idx ON dw_sweep_work (org_id, model, waiting_since)
    WHERE due_at IS NOT NULL;
