"""Advisory-lock classes of the history context: the first key of two-key advisory locks,
so they never collide with each other or with single-key locks (e.g. migrations)."""

from __future__ import annotations

# Ingest holds this per org (transaction scope) while numbering and inserting events, so
# ingest sequence numbers become visible in commit order per org.
INGEST_LOCK_CLASS = 0x48490001
# The retention purge holds this per org exclusively, the sweep's upsert shared: a window
# is never written after the purge removed one of its events.
RETENTION_LOCK_CLASS = 0x48490002
# One sweeper per (partition, model), held for the whole partition (session scope).
SWEEP_LOCK_CLASS = 0x48490003
# One ingest listener across replicas (session scope, second key 0): only its holder's
# sweeper is woken by ingest notifications, so an ingest wakes one pass, not one per replica.
INGEST_LISTENER_LOCK_CLASS = 0x48490004
# Changes to which orgs the directory lists, per org (transaction scope): taken by the
# triggers of migration 0206, which spells this number out (a test checks they agree).
ORG_DIRECTORY_LOCK_CLASS = 0x48490005
