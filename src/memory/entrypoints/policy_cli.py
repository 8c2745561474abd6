"""Operator commands of the policy context:

memory policies reembed --model SPEC [--rebuild]   replay the log into SPEC's rows
memory policies drop-model SPEC                    delete another model's rows
memory policies status                             models, rows, projection positions
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
    drop.add_argument("model", help="model id as stored, e.g. local:multilingual-e5-small")
    drop.set_defaults(func=_drop_model)

    status = commands.add_parser("status", help="models in the read model and their positions")
    status.set_defaults(func=_status)


@contextmanager
def _policies(settings: Settings) -> Iterator[PolicyService]:
    from memory.entrypoints.bootstrap import opened

    with opened(settings, contexts=("policy",)) as services:
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
                report = policies.reembed(args.model, rebuild=args.rebuild, on_progress=progress)
            finally:
                bar.close()
    except ProjectorFailed as exc:
        print(f"memory: {exc}\nrun the same command again to resume", file=sys.stderr)
        return 1
    except DomainError as exc:
        print(f"memory: {_reason(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("memory: interrupted; run the same command again to resume", file=sys.stderr)
        return 130
    print(
        f"{report.model}: projected up to event {report.reached} of {report.head}, "
        f"{report.texts_embedded} texts embedded"
        + (f", {report.rows_removed} old rows removed first" if args.rebuild else "")
    )
    return 0


def _drop_model(args: argparse.Namespace) -> int:
    with _policies(args.settings) as policies:
        try:
            model_id, deleted = policies.drop_model(args.model)
        except DomainError as exc:
            print(f"memory: {_reason(exc)}", file=sys.stderr)
            return 2
    print(f"{model_id}: dropped {deleted} rows, its index and its projection position")
    return 0


def _status(args: argparse.Namespace) -> int:
    with _policies(args.settings) as policies:
        print(f"event log head: {policies.log_head()}")
        for stored in policies.models():
            marker = " (active)" if stored.active else ""
            print(f"{stored.model}{marker}: {stored.rows} rows, projected up to {stored.position}")
    return 0


def _reason(exc: DomainError) -> str:
    return exc.reason if isinstance(exc, InvalidInput) else exc.message
