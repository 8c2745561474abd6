-- The key of erased-sender references in the audit log (docs/adr/0100): 256 random bits,
-- once per database, beside the cursor key. The audit entry of an erasure by sender holds
-- HMAC-SHA256(key, org NUL sender) instead of a plain SHA-256 anyone could confirm by
-- guessing names.
INSERT INTO policy_secrets (name, secret)
VALUES ('erasure_reference', uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()))
ON CONFLICT (name) DO NOTHING;
