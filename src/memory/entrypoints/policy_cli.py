"""Operator commands of the policy context:

memory policies get POLICY_ID                      the current version
memory policies versions POLICY_ID                 every version, with who made it
memory policies list [--source S] [--tag T]        stored policies, newest first, a page
    [--updated-since TIME] [--limit N] [--cursor C]  at a time
memory policies delete POLICY_ID                   delete (audited, as the operator)

get, versions, list and delete take `--namespace global|org:ORG` (default global; an org's
namespace reads its own policies and the global ones, docs/adr/0102).
memory policies reembed --model SPEC [--rebuild]   replay the log into SPEC's rows
memory policies drop-model SPEC                    delete another model's rows
memory policies status                             models, rows, projection positions,
                                                   tracking tables a failed re-embed left

Each calls `PolicyService`, as HTTP does; `memory` names the argument an error is about.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memory.entrypoints.cli_output import emit, error, wants_json
from memory.entrypoints.cli_refusal import refusals

if TYPE_CHECKING:
    from memory.application.policy.service import PolicyService
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
        metavar="MODEL",
        help="model id as stored, e.g. local:multilingual-e5-small, or the name of a tracking"
        " table `memory policies status` lists as untied",
    )
    drop.set_defaults(func=_drop_model)

    status = commands.add_parser("status", help="models in the read model and their positions")
    status.set_defaults(func=_status)

    get = commands.add_parser("get", help="a policy's current version, with its content")
    get.add_argument("policy_id", metavar="POLICY_ID")
    _namespace_argument(get)
    get.set_defaults(func=_get)

    versions = commands.add_parser(
        "versions", help="every version of a policy: what changed, when and by whom"
    )
    versions.add_argument("policy_id", metavar="POLICY_ID")
    _namespace_argument(versions)
    versions.set_defaults(func=_versions)

    listing = commands.add_parser(
        "list",
        help="stored policies, newest first, a page at a time",
        description=(
            "Stored policies of the active model, newest update first. A page ends with "
            "its next cursor: pass it as --cursor, with the same filters, for the next page."
        ),
    )
    listing.add_argument("--source", help="only policies with this source")
    listing.add_argument("--tag", help="only policies carrying this tag")
    listing.add_argument(
        "--updated-since",
        type=_instant,
        metavar="TIME",
        help="only policies updated at or after TIME (ISO 8601 with an offset, e.g. "
        "2026-11-30T00:00:00Z)",
    )
    listing.add_argument("--limit", type=int, help="page size, 1-200 (default 50)")
    listing.add_argument("--cursor", help="the previous page's next cursor")
    _namespace_argument(listing)
    listing.set_defaults(func=_list)

    delete = commands.add_parser(
        "delete",
        help="delete a policy: search never finds it again (recorded in the audit log)",
    )
    delete.add_argument("policy_id", metavar="POLICY_ID")
    _namespace_argument(delete)
    delete.set_defaults(func=_delete)


def _namespace_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--namespace",
        metavar="NAMESPACE",
        help="'global' (the default) or 'org:ORG': where the policy is; reading in an org's "
        "namespace also finds the global policies",
    )


@contextmanager
def _policies(settings: Settings) -> Iterator[PolicyService]:
    from memory.entrypoints.bootstrap import opened

    with opened(settings, contexts=("policy",), create_home=False) as services:
        yield services.policy


def _reembed(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from memory.application.policy.ports import ProjectorFailed
    from memory.entrypoints.operator import cli_actor

    settings: Settings = args.settings
    with refusals(2):
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
    from memory.entrypoints.operator import cli_actor

    with _policies(args.settings) as policies, refusals(2):
        model_id, deleted = policies.drop_model(args.model, actor=cli_actor())
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


def _get(args: argparse.Namespace) -> int:
    from memory.entrypoints.presenters.policy import policy_body
    from memory.entrypoints.presenters.wire import wire

    with _policies(args.settings) as policies, refusals(1):
        policy = policies.get(args.policy_id, namespace=args.namespace)
    emit(wire(policy_body(policy)), title=f"policy {policy.policy_id}, version {policy.version}")
    return 0


def _versions(args: argparse.Namespace) -> int:
    from memory.entrypoints.presenters.policy import versions_body
    from memory.entrypoints.presenters.wire import wire

    with _policies(args.settings) as policies, refusals(1):
        history = policies.versions(args.policy_id, namespace=args.namespace)
    if wants_json():
        emit(wire(versions_body(args.policy_id, history)))
        return 0
    rows = [
        {
            "version": v.version,
            "change": v.change.value,
            "recorded_at": v.recorded_at,
            "actor": "unknown" if v.actor is None else f"{v.actor.name} ({v.actor.key_id})",
            "model": v.model,
        }
        for v in history
    ]
    emit(
        {"namespace": history[0].namespace.text, "versions": rows},
        title=f"policy {args.policy_id}: {len(rows)} versions",
    )
    return 0


def _list(args: argparse.Namespace) -> int:
    from memory.entrypoints.presenters.policy import policy_page_body
    from memory.entrypoints.presenters.wire import wire

    with _policies(args.settings) as policies, refusals(1):
        page = policies.list_policies(
            limit=args.limit,
            cursor=args.cursor,
            source=args.source,
            tag=args.tag,
            updated_since=args.updated_since,
            namespace=args.namespace,
        )
    if wants_json():
        emit(wire(policy_page_body(page)))
        return 0
    rows = [
        {
            "policy_id": p.policy_id,
            "version": p.version,
            "title": p.metadata.title,
            "source": p.metadata.source,
            "tags": list(p.metadata.tags),
            "updated_at": p.updated_at,
        }
        for p in page.policies
    ]
    emit(
        {"policies": rows, "next_cursor": page.next_cursor},
        title=f"{len(rows)} {'policy' if len(rows) == 1 else 'policies'}, newest first",
    )
    return 0


def _delete(args: argparse.Namespace) -> int:
    from memory.entrypoints.operator import cli_actor

    with _policies(args.settings) as policies, refusals(1):
        projected = policies.delete(args.policy_id, actor=cli_actor(), namespace=args.namespace)
    emit(
        {"policy_id": args.policy_id, "deleted": True, "search_updated": projected},
        title=f"policy {args.policy_id} deleted"
        + ("" if projected else "; search drops it once the projector catches up"),
    )
    return 0


def _instant(text: str) -> datetime:
    """An ISO 8601 time; the service checks its offset and range (and names the argument)."""
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an ISO 8601 time (e.g. 2026-11-30T00:00:00Z)"
        ) from None


def _note(rows: int, active: bool, position: int | None) -> str:
    if active:
        return "active"
    if rows == 0 and position is not None:
        return "re-embed stopped before its first row; drop-model removes it"
    if rows == 0:
        return "tracking table only; drop-model removes it"
    return ""
