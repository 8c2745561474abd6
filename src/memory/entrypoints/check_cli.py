"""`memory check --model SPEC`: the built-in multilingual retrieval check against any model
the service can be configured with, so that an operator can verify a model (bge-m3 on
Ollama, EmbeddingGemma, a TEI server) before turning semantic search on.

Prints recall@k per language pair (question -> document) for the model beside full-text
search alone, then the precision table (the precision set: recall@5, off-topic hits per
query and the share of no-answer queries answered empty, per language pair, for the top 5 by
similarity and for the relevance rule), and exits 1 when the model's overall recall is below
`--threshold`. Evaluation embeddings are cached under MEMORY_HOME/check-cache."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from memory.entrypoints.cli_output import emit, error

if TYPE_CHECKING:
    from memory.application.model_check import PrecisionReport
    from memory.domain.retrieval_precision import PrecisionTable
    from memory.domain.retrieval_recall import RecallTable
    from memory.infrastructure.settings import Settings


if TYPE_CHECKING:
    from memory.application.audit.ports import AuditTrail

# Results looked at per question: a history search page shows more, so a document in the
# top 3 of 12 is one a user would see.
DEFAULT_K = 3
# The precision table looks at the top 5, as the acceptance line does (ADR 0112).
PRECISION_K = 5
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
    check.add_argument(
        "--no-precision",
        action="store_true",
        help="recall table only (the precision set embeds 432 more texts)",
    )
    check.set_defaults(func=_check)


def _check(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from memory.application.embedding import EmbeddingError
    from memory.application.model_check import check_model, check_precision
    from memory.datasets.precision_check import load_precision_set
    from memory.datasets.retrieval_check import load_check_set
    from memory.entrypoints.bootstrap import ModelCheckWiring
    from memory.infrastructure.embedding.spec import InvalidModelSpec

    settings: Settings = args.settings
    if not 0.0 <= args.threshold <= 1.0:
        error("--threshold must be between 0 and 1")
        return 2
    if args.k < 1:
        error("--k must be at least 1")
        return 2
    data = load_check_set()
    wiring = ModelCheckWiring(settings)
    try:
        try:
            model = wiring.model(args.model)
        except (InvalidModelSpec, EmbeddingError) as exc:
            error(f"--model: {exc}")
            return 2
        precision_set = None if args.no_precision else load_precision_set()
        with wiring.stores() as stores:
            total = len(data.queries) + (len(precision_set.queries) if precision_set else 0)
            bar = tqdm(total=total, unit="question", desc=f"check {args.model}")
            try:
                table = check_model(
                    model,
                    stores.full_text,
                    data,
                    k=args.k,
                    on_question=lambda: bar.update(),
                )
                precision = (
                    None
                    if precision_set is None
                    else check_precision(
                        model, precision_set, k=PRECISION_K, on_question=lambda: bar.update()
                    )
                )
            except EmbeddingError as exc:
                error(f"{args.model} failed: {type(exc).__name__}: {exc.message}")
                return 2
            else:
                passed = table.overall_semantic >= args.threshold
                document = _document(table, model.identity.id, args.threshold, passed)
                if precision is not None:
                    document["precision"] = _precision_document(precision)
                audit = stores.audit_trail()
                _record(audit, model.identity.id, table, precision, args.threshold, passed)
            finally:
                model.save()
                bar.close()
    finally:
        wiring.close()
    emit(document)
    return 0 if passed else EXIT_BELOW_THRESHOLD


def _record(
    audit: AuditTrail,
    model: str,
    table: RecallTable,
    precision: PrecisionReport | None,
    threshold: float,
    passed: bool,
) -> None:
    """The result as a `model.checked` audit event (figures only, never text): what /healthz
    and the console show for the active model (ADR 0114)."""
    from memory.domain.audit.admin_action import Action, AuditedChange
    from memory.entrypoints.operator import cli_actor

    figures = {
        "passed": passed,
        "threshold": threshold,
        "k": table.k,
        "recall": round(table.overall_semantic, 3),
        "cross_lingual_recall": round(table.cross_lingual_semantic, 3),
        "full_text_recall": round(table.overall_full_text, 3),
        "precision": None
        if precision is None
        else {
            "k": precision.unfiltered.k,
            "min_relevance": precision.rule.min_relevance,
            "min_best_relevance": precision.rule.min_best,
            "recall_by_similarity": round(precision.unfiltered.recall, 3),
            "recall_by_relevance": round(precision.relevance.recall, 3),
            "off_topic_by_similarity": round(precision.unfiltered.off_topic_per_query, 2),
            "off_topic_by_relevance": round(precision.relevance.off_topic_per_query, 2),
            "empty_share_by_relevance": round(precision.relevance.empty_share, 3),
        },
    }
    audit.record(
        cli_actor(),
        Action.MODEL_CHECKED,
        lambda: (None, AuditedChange(target=model, before=None, after=figures)),
    )


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


def _precision_document(report: PrecisionReport) -> dict[str, object]:
    return {
        "k": report.unfiltered.k,
        "queries": report.unfiltered.queries,
        "no_answer_queries": report.unfiltered.no_answer_queries,
        "min_relevance": report.rule.min_relevance,
        "min_best_relevance": report.rule.min_best,
        "by_similarity": _precision_rule(report.unfiltered),
        "by_relevance": _precision_rule(report.relevance),
    }


def _precision_rule(table: PrecisionTable) -> dict[str, object]:
    return {
        "recall": round(table.recall, 3),
        "off_topic_per_query": round(table.off_topic_per_query, 2),
        "empty_share": round(table.empty_share, 3),
        "pairs": [
            {
                "question": p.pair[0],
                "document": p.pair[1],
                "answers": p.answers,
                "recall": None if p.recall is None else round(p.recall, 3),
                "off_topic_per_query": round(p.off_topic_per_query, 2),
            }
            for p in table.pairs
        ],
        "empty_share_by_language": [
            {
                "question": lang.lang,
                "queries": lang.no_answer_queries,
                "empty_share": round(lang.empty_share, 3),
            }
            for lang in table.languages
        ],
    }
