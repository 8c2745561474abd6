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

from memory.domain.active_model import ActiveModelDrop, refuse_dropping_active
from memory.domain.policy.dimensionality import DimensionalityMismatch
from memory.infrastructure.embedding.factory import stored_model_id
from memory.infrastructure.embedding.spec import InvalidModelSpec
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
def _database(settings: Settings) -> Iterator[Any]:
    from memory.entrypoints.database_url import database_url
    from memory.infrastructure.postgres.database import Database

    with database_url(settings) as url:
        database = Database(url, min_size=1, max_size=4)
        database.open()
        try:
            database.migrate()
            yield database
        finally:
            database.close()


def _reembed(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from memory.infrastructure.embedding.factory import ModelRegistry
    from memory.infrastructure.policy.event_store import EventSourcedPolicyLog
    from memory.infrastructure.policy.lease import ProjectionBusy
    from memory.infrastructure.policy.projector import ProjectorFailed
    from memory.infrastructure.policy.reembed import reembed

    settings: Settings = args.settings
    models = ModelRegistry(settings)
    try:
        model = models.get(args.model)
        with _database(settings) as database:
            log = EventSourcedPolicyLog.connect(database.url)
            bar = tqdm(desc=f"reembed {model.identity.id}", unit="event", file=sys.stderr)

            def progress(position: int | None, head: int | None) -> None:
                bar.total = head or 0
                bar.n = min(position or 0, bar.total)
                bar.refresh()

            try:
                report = reembed(database, model, log, rebuild=args.rebuild, on_progress=progress)
            finally:
                bar.close()
                log.close()
    except (InvalidModelSpec, DimensionalityMismatch, ProjectionBusy) as exc:
        print(f"memory: {exc}", file=sys.stderr)
        return 2
    except ProjectorFailed as exc:
        print(f"memory: {exc}\nrun the same command again to resume", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("memory: interrupted; run the same command again to resume", file=sys.stderr)
        return 130
    finally:
        models.close()
    print(
        f"{report.model}: projected up to event {report.reached} of {report.head}, "
        f"{report.texts_embedded} texts embedded"
        + (f", {report.rows_removed} old rows removed first" if args.rebuild else "")
    )
    return 0


def _drop_model(args: argparse.Namespace) -> int:
    from memory.infrastructure.policy.lease import ProjectionBusy
    from memory.infrastructure.policy.model_admin import PolicyModelAdmin

    settings: Settings = args.settings
    model_id = stored_model_id(args.model)
    try:
        refuse_dropping_active(
            model_id,
            stored_model_id(settings.policy_model),
            context="policy",
            setting="MEMORY_POLICY_MODEL",
        )
    except ActiveModelDrop as exc:
        print(f"memory: {exc.message}", file=sys.stderr)
        return 2
    with _database(settings) as database:
        admin = PolicyModelAdmin(database)
        stored = admin.stored_models()
        if model_id not in stored:
            known = ", ".join(stored) or "none"
            print(f"memory: no rows for model {model_id} (stored: {known})", file=sys.stderr)
            return 2
        try:
            deleted = admin.drop(model_id)
        except ProjectionBusy as exc:
            print(f"memory: {exc}", file=sys.stderr)
            return 2
    print(f"{model_id}: dropped {deleted} rows, its index and its projection position")
    return 0


def _status(args: argparse.Namespace) -> int:
    from memory.infrastructure.policy.event_store import EventSourcedPolicyLog
    from memory.infrastructure.policy.model_admin import PolicyModelAdmin
    from memory.infrastructure.policy.projector import read_tracking_position

    settings: Settings = args.settings
    active = stored_model_id(settings.policy_model)
    with _database(settings) as database:
        log = EventSourcedPolicyLog.connect(database.url)
        try:
            head = log.head()
            stored = PolicyModelAdmin(database).stored_models()
            print(f"event log head: {head}")
            for model_id in sorted(set(stored) | {active}):
                position = read_tracking_position(database, model_id)
                marker = " (active)" if model_id == active else ""
                print(
                    f"{model_id}{marker}: {stored.get(model_id, 0)} rows, "
                    f"projected up to {position}"
                )
        finally:
            log.close()
    return 0
