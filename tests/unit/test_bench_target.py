"""`make bench` runs exactly the benchmarks docs/benchmarks.md says it runs."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_make_bench_runs_the_benchmarks_the_docs_say_it_runs() -> None:
    makefile = (ROOT / "Makefile").read_text()
    target = re.search(r"^bench:.*\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert target is not None, "the Makefile has no bench target"
    run = re.findall(r"^\t\$\(PY\) (bench/\w+\.py)$", target[1], re.MULTILINE)
    docs = (ROOT / "docs" / "benchmarks.md").read_text()
    said = re.findall(r"`(bench/\w+\.py)` \(`make bench` runs it\)", docs)
    assert sorted(run) == sorted(said)
    assert all((ROOT / path).is_file() for path in run)
