"""The unit the sweep works in: one channel of one provider of one organisation."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, order=True)
class Partition:
    """Windows never span two partitions: conversations are sessionised strictly within
    `(org_id, provider, channel_id)`."""

    org_id: str
    provider: str
    channel_id: str

    def __str__(self) -> str:
        return f"{self.org_id}/{self.provider}/{self.channel_id}"
