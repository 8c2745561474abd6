-- History search: chat events, the source of truth (seed decision "Digital Worker
-- local embeddings for semantic history search"). Written synchronously by
-- ingest; full-text search uses the stored 'simple' tsvector.
CREATE SEQUENCE dw_chat_events_ingest_seq;

CREATE TABLE dw_chat_events (
    org_id text NOT NULL,
    -- Client idempotency key (or derived from the content); byte order for keyset paging.
    event_id text COLLATE "C" NOT NULL,
    provider text NOT NULL,
    external_channel_id text NOT NULL,
    external_thread_id text,
    sender text NOT NULL,
    event_type text NOT NULL,
    decision text NOT NULL,
    message_text text NOT NULL,
    occurred_at timestamptz NOT NULL,
    ingested_at timestamptz NOT NULL DEFAULT now(),
    -- Assigned under a per-org lock, so numbers become visible in commit order per org:
    -- the sweep's late-message horizon relies on it (docs/adr/0030).
    ingest_seq bigint NOT NULL DEFAULT nextval('dw_chat_events_ingest_seq'),
    search_tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', message_text)) STORED,
    PRIMARY KEY (org_id, event_id)
);

ALTER SEQUENCE dw_chat_events_ingest_seq OWNED BY dw_chat_events.ingest_seq;

CREATE INDEX dw_chat_events_search_idx ON dw_chat_events USING gin (search_tsv);
CREATE INDEX dw_chat_events_timeline_idx
    ON dw_chat_events (org_id, provider, external_channel_id, occurred_at, event_id);
CREATE INDEX dw_chat_events_ingest_idx
    ON dw_chat_events (org_id, provider, external_channel_id, ingest_seq);
CREATE INDEX dw_chat_events_retention_idx ON dw_chat_events (org_id, occurred_at);

-- Every (org, provider, channel) that ever had an event: what the sweep visits.
CREATE TABLE dw_chat_partitions (
    org_id text NOT NULL,
    provider text NOT NULL,
    external_channel_id text NOT NULL,
    first_ingested_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, provider, external_channel_id)
);

-- Wake the sweep when events arrive (one notification per org per transaction).
CREATE FUNCTION dw_chat_events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('memory_history_ingest', o.org_id)
    FROM (SELECT DISTINCT org_id FROM inserted) AS o;
    RETURN NULL;
END
$$;

CREATE TRIGGER dw_chat_events_notify
    AFTER INSERT ON dw_chat_events
    REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION dw_chat_events_notify();
