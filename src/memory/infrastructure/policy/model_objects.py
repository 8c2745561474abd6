"""The database objects that belong to one model's projection: its tracking table, its HNSW
index and its advisory-lock key. Names are derived from the model id, so every process
finds the same ones."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

# Leaves room for the fixed parts within PostgreSQL's 63-byte identifier limit.
SLUG_MAX_CHARS = 24
# Every tracking table's name has this form (LIKE pattern; `_` escaped).
TRACKING_TABLE_LIKE = r"policy\_projection\_%\_tracking"
TRACKING_TABLE_PATTERN = re.compile(r"policy_projection_[a-z0-9_]+_tracking")
# Namespace of the advisory locks held by policy projectors (any constant works, as long as
# no other lock in this database uses it): the ASCII bytes of "pol-proj".
LEASE_NAMESPACE = 0x706F6C2D70726F6A


@dataclass(frozen=True)
class ModelObjects:
    model_id: str

    @property
    def _suffix(self) -> str:
        slug = re.sub(r"[^a-z0-9]+", "_", self.model_id.lower()).strip("_")[:SLUG_MAX_CHARS]
        digest = hashlib.sha256(self.model_id.encode("utf-8")).hexdigest()[:8]
        return f"{slug}_{digest}"

    @property
    def tracking_table(self) -> str:
        return f"policy_projection_{self._suffix}_tracking"

    @property
    def hnsw_index(self) -> str:
        return f"policy_embeddings_hnsw_{self._suffix}"

    @property
    def lease_key(self) -> int:
        """A signed 64-bit advisory-lock key for this model's projector."""
        digest = hashlib.sha256(f"{LEASE_NAMESPACE}:{self.model_id}".encode()).digest()
        return int.from_bytes(digest[:8], "big", signed=True)
