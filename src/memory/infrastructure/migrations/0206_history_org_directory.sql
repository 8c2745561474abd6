-- The org directory behind GET /v1/orgs (docs/adr/0070): one page of orgs, with their
-- summaries, in one cheap query however many orgs there are.

-- Every org the service knows: one with chat partitions (hence events), an org flag
-- override or a retention setting. Kept by the triggers below in the transactions that
-- change those tables, so it is never out of date. `messages` is the org's exact count of
-- rows in dw_chat_events (kept the same way: counting an org's rows at read time costs a
-- scan of its whole index). Byte order ("C") so that pages and prefix ranges are the same
-- on every server, whatever its default collation.
CREATE TABLE dw_orgs (
    org_id text COLLATE "C" PRIMARY KEY,
    messages bigint NOT NULL DEFAULT 0
);

-- Membership changes of one org are serialised by this advisory lock (class 0x48490005,
-- `ORG_DIRECTORY_LOCK_CLASS` in memory.infrastructure.history.locks), so that an org is
-- never forgotten while another transaction is adding it a flag, a retention or events.
-- Every trigger takes it before touching the org's dw_orgs row (one order: no deadlock).
CREATE FUNCTION dw_orgs_lock(org text) RETURNS void LANGUAGE sql AS $$
    SELECT pg_advisory_xact_lock(1212743685, hashtext(org))
$$;

CREATE FUNCTION dw_orgs_remember() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM dw_orgs_lock(NEW.org_id);
    INSERT INTO dw_orgs (org_id) VALUES (NEW.org_id) ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;

-- Runs after the lock is held, so its statement sees what committed meanwhile.
CREATE FUNCTION dw_orgs_forget() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM dw_orgs_lock(OLD.org_id);
    DELETE FROM dw_orgs AS o
    WHERE o.org_id = OLD.org_id
      AND o.messages <= 0
      AND NOT EXISTS (SELECT 1 FROM dw_chat_partitions p WHERE p.org_id = OLD.org_id)
      AND NOT EXISTS (SELECT 1 FROM org_feature_flags f WHERE f.org_id = OLD.org_id)
      AND NOT EXISTS (SELECT 1 FROM dw_org_retention r WHERE r.org_id = OLD.org_id);
    RETURN NULL;
END
$$;

CREATE TRIGGER dw_orgs_partition_added AFTER INSERT ON dw_chat_partitions
    FOR EACH ROW EXECUTE FUNCTION dw_orgs_remember();
CREATE TRIGGER dw_orgs_partition_removed AFTER DELETE ON dw_chat_partitions
    FOR EACH ROW EXECUTE FUNCTION dw_orgs_forget();
CREATE TRIGGER dw_orgs_flag_added AFTER INSERT ON org_feature_flags
    FOR EACH ROW EXECUTE FUNCTION dw_orgs_remember();
CREATE TRIGGER dw_orgs_flag_removed AFTER DELETE ON org_feature_flags
    FOR EACH ROW EXECUTE FUNCTION dw_orgs_forget();
CREATE TRIGGER dw_orgs_retention_added AFTER INSERT ON dw_org_retention
    FOR EACH ROW EXECUTE FUNCTION dw_orgs_remember();
CREATE TRIGGER dw_orgs_retention_removed AFTER DELETE ON dw_org_retention
    FOR EACH ROW EXECUTE FUNCTION dw_orgs_forget();

-- Message counts: one statement-level trigger per ingest or delete (purge, erasure), one
-- row update per org it touched. Ingest holds its per-org lock already, so concurrent
-- ingests of one org wait for each other anyway; other orgs never wait.
CREATE FUNCTION dw_orgs_count_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM dw_orgs_lock(c.org_id) FROM (SELECT DISTINCT org_id FROM inserted ORDER BY 1) AS c;
    INSERT INTO dw_orgs AS o (org_id, messages)
    SELECT org_id, count(*) FROM inserted GROUP BY org_id
    ON CONFLICT (org_id) DO UPDATE SET messages = o.messages + EXCLUDED.messages;
    RETURN NULL;
END
$$;

CREATE FUNCTION dw_orgs_count_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM dw_orgs_lock(c.org_id) FROM (SELECT DISTINCT org_id FROM deleted ORDER BY 1) AS c;
    UPDATE dw_orgs AS o SET messages = o.messages - d.n
    FROM (SELECT org_id, count(*) AS n FROM deleted GROUP BY org_id) AS d
    WHERE o.org_id = d.org_id;
    RETURN NULL;
END
$$;

CREATE TRIGGER dw_orgs_events_inserted AFTER INSERT ON dw_chat_events
    REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION dw_orgs_count_inserted();
CREATE TRIGGER dw_orgs_events_deleted AFTER DELETE ON dw_chat_events
    REFERENCING OLD TABLE AS deleted
    FOR EACH STATEMENT EXECUTE FUNCTION dw_orgs_count_deleted();

-- What exists already. The migration's transaction holds these locks until it commits, so
-- no write is counted twice or missed between the triggers' creation and these counts.
LOCK TABLE dw_chat_events, dw_chat_partitions, org_feature_flags, dw_org_retention
    IN SHARE ROW EXCLUSIVE MODE;
INSERT INTO dw_orgs (org_id, messages)
SELECT org_id, count(*) FROM dw_chat_events GROUP BY org_id;
INSERT INTO dw_orgs (org_id)
SELECT org_id FROM dw_chat_partitions
UNION SELECT org_id FROM org_feature_flags
UNION SELECT org_id FROM dw_org_retention
ON CONFLICT DO NOTHING;

-- Where each partition's sweep stood for each model after the sweep's last visit, as
-- columns (the watermarks themselves are event-sourced aggregates, unreadable by SQL).
-- A cache the sweep rewrites at the end of every visit of a partition; erasure deletes an
-- org's rows, dropping a model deletes that model's.
CREATE TABLE dw_sweep_partition_state (
    org_id text NOT NULL,
    provider text NOT NULL,
    external_channel_id text NOT NULL,
    model text NOT NULL,
    position_at timestamptz,
    position_event_id text COLLATE "C",
    windows_embedded bigint NOT NULL,
    poison_windows integer NOT NULL,
    poison_events integer NOT NULL,
    stalled boolean NOT NULL,
    -- Windows still open (the conversation may go on) when the visit ended.
    open_windows integer NOT NULL,
    swept_at timestamptz NOT NULL,
    -- The last visit that embedded at least one window.
    embedded_at timestamptz,
    PRIMARY KEY (org_id, provider, external_channel_id, model)
);
