-- The target of each audit entry beside its action (docs/adr/0114, amended), so that the newest entry
-- of one action for one target is one index probe: /healthz finds the last `model.checked`
-- of the active model however many entries were written after it. NULL for an entry written
-- before this column existed (its target is in its event); readers that need an old entry's
-- target decode those few events.
ALTER TABLE audit_log ADD COLUMN target text;

CREATE INDEX audit_log_action_target_idx ON audit_log (action, target, notification_id);
