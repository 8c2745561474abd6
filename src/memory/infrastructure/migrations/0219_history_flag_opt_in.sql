-- A global feature flag can be on for the orgs that opt in only (docs/adr/0131): `opt_in`
-- true means the flag is enabled, and an org without its own value does not have it. Existing
-- rows keep their meaning (on for every org that did not opt out, or off).
ALTER TABLE admin_feature_flags
    ADD COLUMN opt_in boolean NOT NULL DEFAULT false,
    ADD CONSTRAINT admin_feature_flags_opt_in_is_enabled CHECK (enabled OR NOT opt_in);
