-- Who created each key (docs/adr/0098): the creating key's id, or `cli`, `bootstrap`,
-- `admin-token`. NULL for a key created before this column existed (its creation is in
-- the audit log). Revoking a key leaves the keys it created alone; an admin lists them
-- by this column (GET /v1/api-keys?created_by=...) and revokes what should go.
ALTER TABLE api_keys ADD COLUMN created_by text;

CREATE INDEX api_keys_created_by_idx ON api_keys (created_by) WHERE created_by IS NOT NULL;
