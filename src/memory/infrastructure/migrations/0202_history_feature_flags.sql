-- Two-layer feature flags (docs/adr/0032): a global (admin) value per flag, and optional
-- per-org overrides. A missing row means the default of that layer.
CREATE TABLE admin_feature_flags (
    flag text PRIMARY KEY,
    enabled boolean NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE org_feature_flags (
    org_id text NOT NULL,
    flag text NOT NULL,
    enabled boolean NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, flag)
);
