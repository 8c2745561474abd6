-- API keys (docs/adr/0057). Only the SHA-256 of a secret is stored; the secret itself is
-- shown once when the key is created. `org_id` NULL = every org. A revoked key keeps its
-- row (the audit log names it) and is refused from the next lookup on.
CREATE TABLE api_keys (
    key_id text PRIMARY KEY,
    name text NOT NULL,
    org_id text,
    scopes text[] NOT NULL,
    secret_sha256 bytea NOT NULL UNIQUE,
    created_at timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at timestamptz
);

CREATE INDEX api_keys_org_idx ON api_keys (org_id, created_at);
