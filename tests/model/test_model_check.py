"""`memory check` against each model tier: a multilingual model answers most questions
across English, Malay, Chinese and rojak, far above full-text search alone, and passes an
operator's threshold."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.model.conftest import LOCAL, ModelTier, with_vectors

from memory.entrypoints.cli import main

# The relevance acceptance runs the whole precision set through the model (once for the run,
# shared with test_relevance_index_path.py: whichever comes first embeds it).
pytestmark = [pytest.mark.model, pytest.mark.long(seconds=50)]

# A multilingual model worth rolling out answers at least this share of the check's
# questions across languages in its top 3 (e5-small: 0.83, see docs/rollout.md).
CROSS_LINGUAL_FLOOR = 0.7


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One MEMORY_HOME for the module's checks: `memory check` caches the check set's vectors
    per model under MEMORY_HOME/check-cache, so the bundled model's full check below does not
    embed again what the first check embedded (the check set's 60 texts)."""
    return tmp_path_factory.mktemp("home")


def test_check_shows_the_model_far_above_full_text(
    model_tier: ModelTier,
    database_url: str,
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    restore_logging: None,
) -> None:
    monkeypatch.setenv("MEMORY_DATABASE_URL", database_url)
    monkeypatch.setenv("MEMORY_HOME", str(home))
    for key, value in model_tier.settings.items():
        monkeypatch.setenv(f"MEMORY_{key.upper()}", str(value))
    model = model_tier.history_model
    code = main(["check", "--model", model, "--threshold", "0.7", "--no-precision", "--json"])
    document = json.loads(capsys.readouterr().out)
    assert code == 0, document
    cross = document["cross_lingual"]
    assert cross["model_recall"] >= CROSS_LINGUAL_FLOOR
    assert cross["model_recall"] > cross["full_text_recall"] + 0.5
    assert document["passed"] is True


# The bundled model on the precision set takes a minute of CPU (or a wait on the worker that
# embeds it) on a shared two-core machine.
@pytest.mark.timeout(1500)
def test_the_relevance_rule_meets_the_acceptance_line_with_the_bundled_model(
    database_url: str,
    home: Path,
    e5_precision_vectors: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    restore_logging: None,
) -> None:
    """Issue 18's line: off-topic semantic hits per query in the top 5 <= 1.5, recall@5 not
    more than 0.03 below the unfiltered top 5, and (the aim) at least half of the no-answer
    queries answered with no semantic hit (docs/adr/0112). The precision set's vectors are
    the bundled model's, embedded once for the run (`e5_precision_vectors`) into the cache
    `memory check` reads (docs/adr/0162)."""
    with_vectors(home / "check-cache", e5_precision_vectors)
    monkeypatch.setenv("MEMORY_DATABASE_URL", database_url)
    monkeypatch.setenv("MEMORY_HOME", str(home))
    assert main(["check", "--model", LOCAL, "--json"]) == 0
    precision = json.loads(capsys.readouterr().out)["precision"]
    today, rule = precision["by_similarity"], precision["by_relevance"]
    assert rule["off_topic_per_query"] <= 1.5 < today["off_topic_per_query"]
    assert rule["recall"] >= today["recall"] - 0.03
    assert rule["empty_share"] >= 0.5 and today["empty_share"] == 0.0
