-- What `GET /v1/audit` filters and pages by (docs/adr/0058). The audit events themselves
-- are in the event store (`auditlog_events`, created by the eventsourcing library); each row
-- here is written in the same transaction as its event and names it by notification id.
CREATE TABLE audit_log (
    notification_id bigint PRIMARY KEY,
    originator_id uuid NOT NULL,
    recorded_at timestamptz NOT NULL,
    org_id text,
    action text NOT NULL
);

CREATE INDEX audit_log_recorded_idx ON audit_log (recorded_at, notification_id);
CREATE INDEX audit_log_org_idx ON audit_log (org_id, notification_id);
