-- When a key expires (docs/adr/0080); NULL = never. An expired key keeps its row, like a
-- revoked one, and is refused with `key_expired` from its expiry on.
ALTER TABLE api_keys ADD COLUMN expires_at timestamptz;
