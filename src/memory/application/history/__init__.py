"""Use cases of history search: ingest, search, the sweep, flags and retention."""
