-- The `metrics:read` scope (docs/adr/0108): /metrics now needs it instead of `admin`. Every
-- key that could read /metrics before (an admin key for every org) keeps that right, so an
-- upgrade does not blind a scraper that still holds its admin key; new scrape keys should
-- hold `metrics:read` alone.
UPDATE api_keys
SET scopes = array_append(scopes, 'metrics:read')
WHERE org_id IS NULL
  AND 'admin' = ANY (scopes)
  AND NOT 'metrics:read' = ANY (scopes);
