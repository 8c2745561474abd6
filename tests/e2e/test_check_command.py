"""`memory check --model SPEC` on a real database with the hash test model: the table per
language pair beside full-text alone, the threshold's exit status, clear errors."""

from __future__ import annotations

import json

import pytest
from tests.conftest import running_app

from memory.application.model_check import check_model
from memory.datasets.retrieval_check import CheckDocument, CheckQuery, CheckSet, load_check_set
from memory.domain.audit.admin_action import Action
from memory.entrypoints.bootstrap import build_services, opened
from memory.entrypoints.check_cli import EXIT_BELOW_THRESHOLD
from memory.entrypoints.cli import main
from memory.entrypoints.http.app import create_app
from memory.entrypoints.model_checks import ModelChecks
from memory.infrastructure.audit.audit_log import PostgresAuditTrail
from memory.infrastructure.embedding.hashing import HashEmbeddingModel
from memory.infrastructure.history.full_text_ranker import PostgresFullTextRanker
from memory.infrastructure.postgres.database import Database
from memory.infrastructure.settings import Settings

LANGUAGES = ("en", "ms", "rojak", "zh")


def test_the_check_set_covers_every_language_pair() -> None:
    data = load_check_set()
    pairs = {(q.lang, data.language_of(q.document)) for q in data.queries}
    assert pairs == {(a, b) for a in LANGUAGES for b in LANGUAGES}
    assert {d.kind for d in data.documents} == {"chat", "policy"}


def test_check_prints_recall_per_pair_and_exits_by_threshold(
    cli_env: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", "--model", "hash:1024", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["model"] == "hash:1024"
    assert len(document["pairs"]) == 16
    assert sum(p["questions"] for p in document["pairs"]) == 48
    recall = document["overall"]["model_recall"]
    assert 0 <= recall < 1  # a hash model is no multilingual model
    precision = document["precision"]
    assert precision["k"] == 5 and precision["no_answer_queries"] >= 50
    for rule in ("by_similarity", "by_relevance"):
        pairs = {(p["question"], p["document"]) for p in precision[rule]["pairs"]}
        assert {(a, b) for a in LANGUAGES for b in LANGUAGES} <= pairs
        assert [x["question"] for x in precision[rule]["empty_share_by_language"]] == sorted(
            LANGUAGES
        )
    # The top 5 by similarity always has 5 hits: no no-answer query is answered empty.
    assert precision["by_similarity"]["empty_share"] == 0.0
    assert precision["by_similarity"]["off_topic_per_query"] > 3
    assert (
        precision["by_relevance"]["off_topic_per_query"]
        < precision["by_similarity"]["off_topic_per_query"]
    )

    assert main(["check", "--model", "hash:1024", "--threshold", "0.99"]) == EXIT_BELOW_THRESHOLD
    out, err = capsys.readouterr()
    assert "model recall" in out and "full text recall" in out
    assert "off topic per query" in out and "empty share" in out
    assert "passed:" in out and "no" in out.split("passed:")[1]
    assert "check hash:1024: 100%" in err  # the progress bar
    assert main(["check", "--model", "hash:1024", "--threshold", str(recall)]) == 0
    capsys.readouterr()

    assert main(["check", "--model", "nope:1", "--json"]) == 2
    assert "--model" in json.loads(capsys.readouterr().out)["error"]
    assert main(["check", "--model", "hash:64", "--threshold", "2"]) == 2
    assert "--threshold must be between 0 and 1" in capsys.readouterr().err


def test_full_text_alone_finds_same_words_and_chinese_keywords(database_url: str) -> None:
    data = CheckSet(
        [
            CheckDocument("a", "en", "chat", "The forklift in the warehouse is broken."),
            CheckDocument("b", "zh", "chat", "仓库的叉车坏了，今天的货要延迟。"),  # noqa: RUF001
            CheckDocument("c", "ms", "chat", "Forklift di gudang rosak."),
        ],
        [
            CheckQuery("a", "en", "broken forklift"),
            CheckQuery("b", "zh", "叉车"),
            CheckQuery("c", "en", "broken forklift"),  # another language: no shared words
        ],
    )
    database = Database(database_url, min_size=1, max_size=1)
    database.open()
    try:
        ranker = PostgresFullTextRanker(database)
        docs = [(d.id, d.text) for d in data.documents]
        assert ranker.rank("broken forklift", docs, 3) == ["a"]
        assert ranker.rank("叉车", docs, 3) == ["b"]
        table = check_model(HashEmbeddingModel(64), ranker, data, k=1)
    finally:
        database.close()
    by_pair = {p.pair: p.full_text for p in table.pairs}
    assert by_pair == {("en", "en"): 1.0, ("zh", "zh"): 1.0, ("en", "ms"): 0.0}


def test_a_check_is_recorded_for_its_model_and_shown_by_healthz(
    cli_env: str, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = Settings()
    with opened(settings, create_home=False) as services:
        assert services.model_checks.report(["hash:1024"]) == {"hash:1024": {"checked": False}}
    assert main(["check", "--model", "hash:1024", "--threshold", "0.99", "--json"]) == 1
    document = json.loads(capsys.readouterr().out)
    with opened(settings, create_home=False) as services:
        audit = services.audit
        assert isinstance(audit, PostgresAuditTrail)
        entry = audit.latest(Action.MODEL_CHECKED, "hash:1024")
        assert entry is not None and entry.actor.key_id == "cli"
        assert entry.after["passed"] is False and entry.after["threshold"] == 0.99
        assert entry.after["recall"] == document["overall"]["model_recall"]
        assert (
            entry.after["precision"]["off_topic_by_relevance"]
            == (document["precision"]["by_relevance"]["off_topic_per_query"])
        )
        # A fresh process reads it (the report is cached per process for a minute).
        report = ModelChecks(audit).report(["hash:1024", "hash:384"])
    assert report["hash:1024"]["checked"] is True and report["hash:1024"]["passed"] is False
    assert report["hash:384"] == {"checked": False}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_healthz_shows_the_warm_up_and_the_last_check(cli_env: str) -> None:
    assert main(["check", "--model", "hash:1024", "--json"]) == 0
    settings = Settings()
    app = create_app(lambda: build_services(settings, cli_env), run_workers=False)
    async with running_app(app) as client:
        health = (await client.get("/healthz")).json()
    assert health["warm_up"]["ready"] is True
    assert set(health["warm_up"]["models"]) == {"hash:1024", "hash:384"}
    assert health["model_checks"]["hash:1024"]["passed"] is True
    assert health["model_checks"]["hash:384"] == {"checked": False}
