-- A slice takes each org's next due partitions in their turn order (docs/adr/0090): with
-- this index it reads at most a slice's worth of each due org's rows, in that order,
-- instead of numbering every due row of every org and sorting them (26-33 ms per slice with
-- 10,000 partitions due in one org, once per slice; docs/adr/0136).
CREATE INDEX dw_sweep_work_turns_idx
    ON dw_sweep_work (model, org_id, due_at, waiting_since, provider, external_channel_id)
    WHERE due_at IS NOT NULL;
