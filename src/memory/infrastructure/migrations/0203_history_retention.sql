-- Per-org retention of chat history; orgs without a row use the configured default.
CREATE TABLE dw_org_retention (
    org_id text PRIMARY KEY,
    retention_days integer NOT NULL CHECK (retention_days BETWEEN 1 AND 3650),
    updated_at timestamptz NOT NULL DEFAULT now()
);
