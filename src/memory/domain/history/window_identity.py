"""Deterministic window ids: the same messages embedded by the same model are the same row,
so re-running a sweep after a crash overwrites instead of duplicating."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from memory.domain.history.partition import Partition

# Fixed forever: changing it would orphan every stored window.
WINDOW_ID_NAMESPACE = uuid.UUID("0b0c6f0e-4d3c-4a55-8f8e-6f2b1f6c9a10")
_SEPARATOR = "\x1f"


def window_id(partition: Partition, model: str, event_ids: Sequence[str]) -> uuid.UUID:
    """UUID5 over the partition, the model and the window's event ids in order. Event ids are
    unique only within an org, hence the partition; the model, because each model's vectors
    are separate rows."""
    if not event_ids:
        raise ValueError("a window has at least one event")
    parts = [partition.org_id, partition.provider, partition.channel_id, model, *event_ids]
    return uuid.uuid5(WINDOW_ID_NAMESPACE, _SEPARATOR.join(parts))
