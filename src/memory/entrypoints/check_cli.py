"""`memory check --model SPEC`: the built-in multilingual retrieval check against any model
the service can be configured with, so that an operator can verify a model (bge-m3 on
Ollama, EmbeddingGemma, a TEI server) before turning semantic search on.

Prints recall@k per language pair (question -> document) for the model beside full-text
search alone, and exits 1 when the model's overall recall is below `--threshold`."""

from __future__ import annotations

import argparse

from tqdm import tqdm

from memory.application.embedding import EmbeddingError
from memory.application.model_check import check_model
from memory.datasets.retrieval_check import load_check_set
from memory.domain.retrieval_recall import RecallTable
from memory.entrypoints.cli_output import emit, error
from memory.infrastructure.embedding.spec import InvalidModelSpec
from memory.infrastructure.settings import Settings

# Results looked at per question: a history search page shows more, so a document in the
# top 3 of 12 is one a user would see.
DEFAULT_K = 3
EXIT_BELOW_THRESHOLD = 1


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    check = sub.add_parser(
        "check",
        help="measure a model's multilingual retrieval before rolling it out",
        description=(
            "Embed the built-in check set (conversations and policies in English, Malay, "
            "Chinese and rojak) with MODEL and print recall@k per language pair beside "
            "full-text search alone. Exit status 1 when the overall recall is below "
            "--threshold."
        ),
    )
    check.add_argument("--model", required=True, help="model spec, e.g. ollama:bge-m3")
    check.add_argument(
        "--threshold",
        type=float,
        default=0.0,
        help="least overall recall (0..1) for success; default 0 (report only)",
    )
    check.add_argument("--k", type=int, default=DEFAULT_K, help="results per question")
    check.set_defaults(func=_check)


def _check(args: argparse.Namespace) -> int:
    from memory.entrypoints.database_url import database_url
    from memory.infrastructure.embedding.factory import ModelRegistry
    from memory.infrastructure.history.full_text_ranker import PostgresFullTextRanker
    from memory.infrastructure.postgres.database import Database

    settings: Settings = args.settings
    if not 0.0 <= args.threshold <= 1.0:
        error("--threshold must be between 0 and 1")
        return 2
    if args.k < 1:
        error("--k must be at least 1")
        return 2
    data = load_check_set()
    registry = ModelRegistry(settings)
    try:
        try:
            model = registry.get(args.model)
        except (InvalidModelSpec, EmbeddingError) as exc:
            error(f"--model: {exc}")
            return 2
        with database_url(settings, create=False) as url:
            database = Database(url, min_size=1, max_size=1, timeout=settings.database_timeout)
            database.open()
            bar = tqdm(total=len(data.queries), unit="question", desc=f"check {args.model}")
            try:
                table = check_model(
                    model,
                    PostgresFullTextRanker(database),
                    data,
                    k=args.k,
                    on_question=lambda: bar.update(),
                )
            except EmbeddingError as exc:
                error(f"{args.model} failed: {type(exc).__name__}: {exc.message}")
                return 2
            finally:
                bar.close()
                database.close()
    finally:
        registry.close()
    passed = table.overall_semantic >= args.threshold
    emit(_document(table, model.identity.id, args.threshold, passed))
    return 0 if passed else EXIT_BELOW_THRESHOLD


def _document(table: RecallTable, model: str, threshold: float, passed: bool) -> dict[str, object]:
    return {
        "model": model,
        "k": table.k,
        "pairs": [
            {
                "question": p.pair[0],
                "document": p.pair[1],
                "questions": p.questions,
                "model_recall": round(p.semantic, 3),
                "full_text_recall": round(p.full_text, 3),
            }
            for p in table.pairs
        ],
        "overall": {
            "model_recall": round(table.overall_semantic, 3),
            "full_text_recall": round(table.overall_full_text, 3),
        },
        "cross_lingual": {
            "model_recall": round(table.cross_lingual_semantic, 3),
            "full_text_recall": round(table.cross_lingual_full_text, 3),
        },
        "threshold": threshold,
        "passed": passed,
    }
