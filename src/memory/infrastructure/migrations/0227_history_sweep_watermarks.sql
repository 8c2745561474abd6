-- The sweep's watermarks as a projection of positions (docs/adr/0148): one row per
-- partition and model, the aggregate's state as the eventsourcing library snapshots it
-- (`state`, the library's JSON), replaced by one set-based statement per batch in the
-- transaction that writes the batch's windows. Before, each watermark was an event stream
-- in the library's own tables (`historysweep_events`, `historysweep_snapshots`) and every
-- batch appended an event per partition (docs/adr/0091). A process starting on a database
-- that still has those tables carries their watermarks over once
-- (`memory.infrastructure.history.watermark_store`), then renames them with the suffix
-- `_carried` (kept, not dropped).
CREATE TABLE dw_sweep_watermarks (
    -- `watermark_id(partition, model)`: the aggregate's id.
    id uuid PRIMARY KEY,
    org_id text NOT NULL,
    provider text NOT NULL,
    external_channel_id text NOT NULL,
    model text NOT NULL,
    -- The aggregate's version: a save names the version it loaded and is refused when
    -- another writer moved the row meanwhile.
    version bigint NOT NULL CHECK (version > 0),
    -- Readable copies of what the state holds (for operators; the store reads `state`).
    position_at timestamptz,
    position_event_id text,
    seen_seq bigint NOT NULL,
    windows_embedded bigint NOT NULL,
    -- The library's snapshot of the aggregate: its topic and its transcoded state.
    topic text NOT NULL,
    state bytea NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
