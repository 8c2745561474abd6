-- Work waiting for the sweep (docs/adr/0089): per partition and model, when the sweep
-- should next visit it, kept in the transactions that create the work (ingest) and that do
-- it (the end of a visit), so a pass finds the partitions with work by one indexed
-- statement instead of visiting every partition of every org.

-- The models sweepers have swept with. Ingest gives every new partition a row of work for
-- each of them; a model seen for the first time gets a row for every existing partition in
-- the transaction that registers it (a rebuild starts with every partition due).
CREATE TABLE dw_sweep_models (
    model text PRIMARY KEY,
    registered_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE dw_sweep_work (
    org_id text NOT NULL,
    provider text NOT NULL,
    external_channel_id text NOT NULL,
    model text NOT NULL REFERENCES dw_sweep_models ON DELETE CASCADE,
    -- Ingests of embeddable messages into the partition, counted. A visit remembers the
    -- count it started from and clears the work only if it is unchanged when it ends: an
    -- ingest that raced with the visit is never cleared unseen.
    changes bigint NOT NULL DEFAULT 0,
    -- When the sweep should visit next (NULL: nothing to do until an ingest). '-infinity'
    -- after an ingest; the instant an open tail's gap elapses; the end of a visit that
    -- left work for a later slice.
    due_at timestamptz,
    -- Since when embeddable work has been waiting (NULL: none): its age, reported as
    -- "waiting for" in /healthz, the sweep status and the metrics.
    waiting_since timestamptz,
    -- Windows the last visit left (open or for a later slice), at least 1 after an ingest.
    pending_windows integer NOT NULL DEFAULT 0,
    PRIMARY KEY (org_id, provider, external_channel_id, model),
    FOREIGN KEY (org_id, provider, external_channel_id)
        REFERENCES dw_chat_partitions ON DELETE CASCADE
);

-- What a pass selects: the due rows of its model, oldest first.
CREATE INDEX dw_sweep_work_due_idx ON dw_sweep_work (model, due_at)
    WHERE due_at IS NOT NULL;
-- An org's waiting work (search's pending windows, the sweep status' summary).
CREATE INDEX dw_sweep_work_org_idx ON dw_sweep_work (org_id, model)
    WHERE due_at IS NOT NULL;
