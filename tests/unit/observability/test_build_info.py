"""`memory_build_info` names the running version and commit: the commit of the checkout the
package runs from, and never text that is not a commit."""

from __future__ import annotations

import subprocess
from pathlib import Path

from prometheus_client import REGISTRY

from memory.entrypoints.cli import memory_version
from memory.infrastructure import build_info


def test_the_version_is_what_memory_version_prints() -> None:
    assert build_info.version() == memory_version() != build_info.UNKNOWN


def test_a_source_checkout_reports_its_head_commit() -> None:
    root = Path(build_info.__file__).resolve().parents[3]
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
    ).stdout.strip()
    build_info.commit.cache_clear()
    assert build_info.commit() == head


def test_only_hex_object_names_are_accepted() -> None:
    assert build_info._valid("F86BD31F11974A2E5388C469AB40A5960B7DDC7E\n") == (
        "f86bd31f11974a2e5388c469ab40a5960b7ddc7e"
    )
    for junk in ("", "main", "f86bd3", "f86bd31 ; rm -rf", "<script>"):
        assert build_info._valid(junk) is None


def test_publish_sets_one_series_labelled_with_version_and_commit() -> None:
    build_info.publish()
    labels = {"version": build_info.version(), "commit": build_info.commit()}
    assert REGISTRY.get_sample_value("memory_build_info", labels) == 1
