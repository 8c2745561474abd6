"""Splitting inputs into requests of bounded size."""

from __future__ import annotations

from collections.abc import Iterator, Sequence


def in_batches(texts: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    """Consecutive slices of at most `size` texts, in order; none for no texts."""
    for start in range(0, len(texts), size):
        yield texts[start : start + size]
