"""The examples of docs/api.md run as written, each in a process of its own (as a sibling
context would run them), against a real database."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"
EXAMPLES = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)


def test_the_doc_has_an_example_per_context() -> None:
    assert len(EXAMPLES) == 2
    assert "mem.policies" in EXAMPLES[0] and "mem.history" in EXAMPLES[1]


@pytest.mark.parametrize("example", EXAMPLES, ids=["policy", "history"])
def test_an_example_runs(example: str, database_url: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    env |= {
        "MEMORY_DATABASE_URL": database_url,
        "MEMORY_HOME": str(tmp_path / "home"),
        # Deterministic stand-ins: the examples are about the API, not about meaning.
        "MEMORY_POLICY_MODEL": "hash:384",
        "MEMORY_HISTORY_MODEL": "hash:1024",
        "MEMORY_PROJECTION_WAIT_TIMEOUT": "20",
    }
    done = subprocess.run(
        [sys.executable, "-c", example],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
