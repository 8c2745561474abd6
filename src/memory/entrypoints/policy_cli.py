"""Operator commands of the policy context:

memory policies reembed --model SPEC [--rebuild]   replay the log into SPEC's rows
memory policies drop-model SPEC                    delete another model's rows
memory policies status                             models, rows, projection positions,
                                                   tracking tables a failed re-embed left
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from memory.application.policy.ports import ProjectorFailed
from memory.application.policy.service import PolicyService
from memory.domain.errors import DomainError, InvalidInput
from memory.entrypoints.cli_output import emit, error
from memory.entrypoints.operator import cli_actor
from memory.infrastructure.settings import Settings


def register(sub: argparse._SubParsersAction[Any]) -> None:
    policies = sub.add_parser("policies", help="policy memory: model swaps and read-model upkeep")
    commands = policies.add_subparsers(dest="policies_command", required=True)

    reembed = commands.add_parser(
        "reembed",
        help="embed every policy's current version with a model (resumable)",
        description=(
            "Replay the policy event log into rows for MODEL, embedding each policy's current "
            "text with it. Safe to interrupt: running it again resumes. Search uses the "
            "active model (MEMORY_POLICY_MODEL) only; switch it once this has finished."
        ),
    )
    reembed.add_argument(
        "--model", required=True, help="model spec, e.g. ollama:embeddinggemma@384"
    )
    reembed.add_argument(
        "--rebuild",
        action="store_true",
        help="delete the model's rows and position first and replay from the beginning",
    )
    reembed.set_defaults(func=_reembed)

    drop = commands.add_parser(
        "drop-model",
        help="delete the rows, index and position of a model that is not the active one",
    )
    drop.add_argument(
        "model",
        help="model id as stored, e.g. local:multilingual-e5-small, or the name of a tracking"
        " table `memory policies status` lists as untied",
    )
    drop.set_defaults(func=_drop_model)

    status = commands.add_parser("status", help="models in the read model and their positions")
    status.set_defaults(func=_status)


@contextmanager
def _policies(settings: Settings) -> Iterator[PolicyService]:
    from memory.entrypoints.bootstrap import opened

    with opened(settings, contexts=("policy",), create_home=False) as services:
        yield services.policy


def _reembed(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    settings: Settings = args.settings
    try:
        with _policies(settings) as policies:
            model_id = policies.stored_model_id(args.model)
            bar = tqdm(desc=f"reembed {model_id}", unit="event", file=sys.stderr)

            def progress(position: int | None, head: int | None) -> None:
                bar.total = head or 0
                bar.n = min(position or 0, bar.total)
                bar.refresh()

            try:
                report = policies.reembed(
                    args.model, actor=cli_actor(), rebuild=args.rebuild, on_progress=progress
                )
            finally:
                bar.close()
    except ProjectorFailed as exc:
        error(f"{exc}\nrun the same command again to resume")
        return 1
    except DomainError as exc:
        error(_reason(exc))
        return 2
    except KeyboardInterrupt:
        error("interrupted; run the same command again to resume")
        return 130
    emit(
        {
            "model": report.model,
            "reached": report.reached,
            "head": report.head,
            "texts_embedded": report.texts_embedded,
            "rows_removed": report.rows_removed,
        },
        title=(
            f"{report.model}: projected up to event {report.reached} of {report.head}, "
            f"{report.texts_embedded} texts embedded"
            + (f", {report.rows_removed} old rows removed first" if args.rebuild else "")
        ),
    )
    return 0


def _drop_model(args: argparse.Namespace) -> int:
    with _policies(args.settings) as policies:
        try:
            model_id, deleted = policies.drop_model(args.model, actor=cli_actor())
        except DomainError as exc:
            error(_reason(exc))
            return 2
    emit(
        {"model": model_id, "rows_deleted": deleted},
        title=f"{model_id}: dropped {deleted} rows, its index and its projection position",
    )
    return 0


def _status(args: argparse.Namespace) -> int:
    with _policies(args.settings) as policies:
        head = policies.log_head()
        models = policies.models()
        untied = policies.untied_tracking_tables()
    emit(
        {
            "event_log_head": head,
            "models": [
                {
                    "model": m.model,
                    "active": m.active,
                    "rows": m.rows,
                    "position": m.position,
                    # A table without rows: a re-embed stopped before its first row.
                    "note": _note(m.rows, m.active, m.position),
                }
                for m in models
            ],
            "untied_tracking_tables": untied,
        }
    )
    return 0


def _note(rows: int, active: bool, position: int | None) -> str:
    if active:
        return "active"
    if rows == 0 and position is not None:
        return "re-embed stopped before its first row; drop-model removes it"
    if rows == 0:
        return "tracking table only; drop-model removes it"
    return ""


def _reason(exc: DomainError) -> str:
    return exc.reason if isinstance(exc, InvalidInput) else exc.message
