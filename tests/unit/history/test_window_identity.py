from __future__ import annotations

import uuid

import pytest

from memory.domain.history.partition import Partition
from memory.domain.history.window_identity import WINDOW_ID_NAMESPACE, window_id

P = Partition("acme", "slack", "C1")


def test_the_same_window_has_the_same_id() -> None:
    assert window_id(P, "hash:1024", ["a", "b"]) == window_id(P, "hash:1024", ["a", "b"])


def test_the_id_depends_on_model_partition_and_events() -> None:
    base = window_id(P, "hash:1024", ["a", "b"])
    assert window_id(P, "hash:384", ["a", "b"]) != base
    assert window_id(Partition("other", "slack", "C1"), "hash:1024", ["a", "b"]) != base
    assert window_id(Partition("acme", "slack", "C2"), "hash:1024", ["a", "b"]) != base
    assert window_id(P, "hash:1024", ["a"]) != base
    assert window_id(P, "hash:1024", ["a", "b", "c"]) != base


def test_fields_cannot_run_into_each_other() -> None:
    assert window_id(P, "m", ["ab", "c"]) != window_id(P, "m", ["a", "bc"])


def test_ids_are_stable_across_releases() -> None:
    # Changing the namespace or the encoding would orphan every stored row.
    assert uuid.UUID("0b0c6f0e-4d3c-4a55-8f8e-6f2b1f6c9a10") == WINDOW_ID_NAMESPACE
    expected = uuid.uuid5(WINDOW_ID_NAMESPACE, "acme\x1fslack\x1fC1\x1fhash:1024\x1fa\x1fb")
    assert window_id(P, "hash:1024", ["a", "b"]) == expected


def test_a_window_has_events() -> None:
    with pytest.raises(ValueError):
        window_id(P, "m", [])
