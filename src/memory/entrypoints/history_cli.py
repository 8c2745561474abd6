"""Operator commands of the history context: `memory sweep`, `memory purge`, and
`memory history ...` (drop-model, retention, status, orgs, reindex, indexes)."""

from __future__ import annotations

import argparse
import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from memory.domain.history.partition_listing import PARTITION_PAGE_DEFAULT, PARTITION_PAGE_MAX
from memory.domain.history.search_path import SearchIndexState
from memory.entrypoints.cli_output import emit, wants_json
from memory.entrypoints.cli_refusal import refusals

if TYPE_CHECKING:
    from tqdm import tqdm

    from memory.application.history.search_indexes import SearchIndexStatus
    from memory.application.history.service import HistoryService
    from memory.application.history.sweep import PartitionReport
    from memory.domain.audit.admin_action import Actor
    from memory.infrastructure.settings import Settings


log = logging.getLogger(__name__)


class SweepBar:
    """A tqdm bar over the partitions of one pass."""

    def __init__(self) -> None:
        self._bar: tqdm[Any] | None = None
        self._embedded = 0
        self._skipped = 0

    def started(self, partitions: int) -> None:
        from tqdm import tqdm

        self._bar = tqdm(total=partitions, unit="partition", desc="sweep")

    def partition_done(self, report: PartitionReport) -> None:
        if self._bar is None:
            return
        self._embedded += report.windows_embedded
        self._skipped += report.windows_skipped
        self._bar.set_postfix(embedded=self._embedded, skipped=self._skipped, refresh=False)
        self._bar.update(1)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


class _PurgeBar:
    """A tqdm bar over the orgs a purge visits."""

    def __init__(self) -> None:
        self._bar: tqdm[Any] | None = None
        self._events = 0

    def started(self, orgs: int) -> None:
        from tqdm import tqdm

        self._bar = tqdm(total=orgs, unit="org", desc="purge")

    def org_done(self, org_id: str, events_deleted: int, embeddings_deleted: int) -> None:
        if self._bar is None:
            return
        self._events += events_deleted
        self._bar.set_postfix(events_deleted=self._events, refresh=False)
        self._bar.update(1)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


class _ReindexBar:
    """A tqdm bar over the rows a re-index rewrites."""

    def __init__(self) -> None:
        self._bar: tqdm[Any] | None = None

    def started(self, stale_rows: int) -> None:
        from tqdm import tqdm

        self._bar = tqdm(total=stale_rows, unit="row", desc="reindex")

    def batch_done(self, rows: int) -> None:
        if self._bar is not None:
            self._bar.update(rows)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


@contextmanager
def _history(settings: Settings) -> Iterator[HistoryService]:
    from memory.entrypoints.bootstrap import opened

    with opened(settings, contexts=("history",), create_home=False) as services:
        yield services.history


def _print(data: dict[str, Any], title: str | None = None) -> None:
    emit(data, title=title)


def _sweep(args: argparse.Namespace) -> int:
    from memory.entrypoints.operator import cli_actor

    settings: Settings = args.settings
    with _history(settings) as history:
        # The operator started this: the first pass is recorded (later ones of a loop are
        # the command's own schedule).
        actor: Actor | None = cli_actor()
        while True:
            bar = SweepBar()
            try:
                report = history.sweep(args.org_id, trigger="cli", progress=bar, actor=actor)
            finally:
                bar.close()
            actor = None
            _print(report.summary())
            if args.once:
                return 0
            time.sleep(settings.sweep_interval)


def _purge(args: argparse.Namespace) -> int:
    from memory.entrypoints.operator import cli_actor
    from memory.entrypoints.presenters.history import purge_body
    from memory.entrypoints.presenters.wire import wire

    with _history(args.settings) as history:
        bar = _PurgeBar()
        try:
            report = history.purge(args.org_id, observer=bar, actor=cli_actor())
        finally:
            bar.close()
        _print(wire(purge_body(report)))
    return 0


def _drop_model(args: argparse.Namespace) -> int:
    from memory.entrypoints.operator import cli_actor

    with _history(args.settings) as history:
        with refusals(2):
            report = history.drop_model(args.model, actor=cli_actor())
        _print(
            {
                "model": report.model,
                "rows_deleted": report.rows_deleted,
                "watermarks_reset": report.watermarks_reset,
            }
        )
    return 0


def _retention(args: argparse.Namespace) -> int:
    from memory.entrypoints.operator import cli_actor
    from memory.entrypoints.presenters.history import retention_body
    from memory.entrypoints.presenters.wire import wire

    with _history(args.settings) as history:
        with refusals(2):
            if args.days is not None:
                found = history.set_retention(args.org_id, args.days, actor=cli_actor())
            else:
                found = history.retention(args.org_id)
        _print(wire(retention_body(found)))
    return 0


def _status(args: argparse.Namespace) -> int:
    with _history(args.settings) as history:
        status = history.sweep_status(args.org_id, limit=args.limit, cursor=args.cursor)
        _print(
            {
                "org_id": args.org_id,
                "model": status.model,
                "models_stored": history.stored_models(),
                # Non-zero after an upgrade until `memory history reindex` has run.
                "full_text_rows_to_reindex": history.stale_full_text_rows(args.org_id),
                "totals": status.totals,
                "waiting": {
                    "partitions": status.backlog.partitions,
                    "oldest_age_seconds": status.backlog.oldest_age_seconds,
                },
                "partitions": [
                    {
                        "partition": str(s.partition),
                        "position": s.mark.position,
                        "lag_events": s.lag_events,
                        "oldest_closed_window_age_seconds": s.oldest_closed_window_age_seconds,
                        "open_windows": s.open_windows,
                        "poison_windows": len(s.poison_windows),
                        "poison_events": len(s.poison_events),
                        "stalled": s.stalled,
                    }
                    for s in status.partitions
                ],
                "next_cursor": status.next_cursor,
            }
        )
    return 0


def _orgs(args: argparse.Namespace) -> int:
    with _history(args.settings) as history:
        with refusals(2):
            page = history.orgs(limit=args.limit, prefix=args.prefix, cursor=args.cursor)
        if wants_json():
            _print({"orgs": page.orgs, "next_cursor": page.next_cursor})
            return 0
        rows = [
            {
                "org": o.org_id,
                "semantic": o.semantic_search,
                "decided_by": f"{o.semantic_search_by.layer}:{o.semantic_search_by.flag}",
                "retention_days": o.retention_days,
                "default_retention": o.retention_default,
                "partitions": o.partitions,
                "messages": o.messages,
                "open": o.open_windows,
                "poison_windows": o.poison_windows,
                "poison_events": o.poison_events,
                "max_lag_s": None if o.max_lag_seconds is None else round(o.max_lag_seconds),
                "last_embedded_at": o.last_embedded_at,
            }
            for o in page.orgs
        ]
        _print({"orgs": rows or "none", "next_cursor": page.next_cursor})
    return 0


# How often `memory history indexes --watch` reads the builds' progress again (the builder
# copies it every 2 s).
INDEX_WATCH_SECONDS = 2.0


def _indexes(args: argparse.Namespace) -> int:
    """The search indexes of one org, or every org's counted by state with the builder's
    queue; `--watch` follows the running builds with a progress bar until none is left."""
    from memory.entrypoints.presenters.history import (
        org_search_indexes_body,
        search_index_summary_body,
    )
    from memory.entrypoints.presenters.wire import wire

    with _history(args.settings) as history:

        def read() -> tuple[dict[str, Any], list[SearchIndexStatus]]:
            if args.org_id is not None:
                found = history.search_indexes(args.org_id)
                return wire(org_search_indexes_body(found)), found.indexes
            summary = history.search_index_summary()
            return wire(search_index_summary_body(summary)), summary.queue

        with refusals(2):
            document, indexes = read()
            if args.watch:
                document = _watch_builds(read, document, indexes)
        _print(document if wants_json() else _index_table(document))
    return 0


def _watch_builds(
    read: Callable[[], tuple[dict[str, Any], list[SearchIndexStatus]]],
    document: dict[str, Any],
    indexes: list[SearchIndexStatus],
) -> dict[str, Any]:
    """Reads again every INDEX_WATCH_SECONDS while an index is wanted or building, showing
    the first running build's phase and progress; the last document read."""
    from tqdm import tqdm

    bar: tqdm[Any] | None = None
    try:
        while any(i.state in _UNFINISHED for i in indexes):
            running = next((i for i in indexes if i.progress is not None), None)
            if running is not None and running.progress is not None:
                if bar is None:
                    bar = tqdm(total=100, unit="%", desc="index")
                bar.set_description(f"{running.org_id}: {running.phase or 'starting'}")
                bar.n = round(100 * running.progress)
                bar.refresh()
            time.sleep(INDEX_WATCH_SECONDS)
            document, indexes = read()
    finally:
        if bar is not None:
            bar.close()
    return document


_UNFINISHED = (SearchIndexState.WANTED, SearchIndexState.BUILDING)


def _index_table(document: dict[str, Any]) -> dict[str, Any]:
    """The readable form: one row per index, its progress in percent."""
    key = "indexes" if "indexes" in document else "queue"
    rows = [
        {
            "org": i["org_id"],
            "model": i["model"],
            "state": i["state"],
            "phase": i["phase"],
            "progress": None if i["progress"] is None else f"{100 * i['progress']:.0f}%",
            "windows_seen": i["windows_seen"],
            "failures": i["failures"],
            "last_error": i["last_error"],
        }
        for i in document[key]
    ]
    return {**{k: v for k, v in document.items() if k != key}, key: rows or "none"}


def _reindex(args: argparse.Namespace) -> int:
    with _history(args.settings) as history:
        bar = _ReindexBar()
        try:
            report = history.reindex_full_text(progress=bar)
        finally:
            bar.close()
        _print({"rows_reindexed": report.rows_reindexed, "rows_left": report.rows_left})
    return 0


def register(sub: argparse._SubParsersAction[Any]) -> None:
    sweep = sub.add_parser("sweep", help="embed closed conversation windows (history search)")
    sweep.add_argument("--once", action="store_true", help="run one pass and exit")
    sweep.add_argument("--org", dest="org_id", help="only this org's partitions")
    sweep.set_defaults(func=_sweep)

    purge = sub.add_parser("purge", help="delete chat history past each org's retention")
    purge.add_argument("--org", dest="org_id", help="only this org")
    purge.set_defaults(func=_purge)

    history = sub.add_parser("history", help="history search operations")
    commands = history.add_subparsers(dest="history_command", required=True)
    drop = commands.add_parser(
        "drop-model", help="delete a no-longer-active model's embeddings and reset its progress"
    )
    drop.add_argument(
        "model",
        metavar="MODEL",
        help="model spec, e.g. ollama:bge-m3 or local:multilingual-e5-small",
    )
    drop.set_defaults(func=_drop_model)
    retention = commands.add_parser("retention", help="show or set an org's retention")
    retention.add_argument("org_id", metavar="ORG")
    retention.add_argument("--days", type=int, help="set the retention to this many days")
    retention.set_defaults(func=_retention)
    status = commands.add_parser(
        "status",
        help="sweep progress of an org: its totals and a page of its partitions",
        description=(
            "The org's totals and one page of its partitions, in order of provider and "
            "channel; pass the printed next cursor as --cursor for the next page."
        ),
    )
    status.add_argument("org_id", metavar="ORG")
    status.add_argument(
        "--limit",
        type=int,
        help=f"partitions per page (1..{PARTITION_PAGE_MAX}, default {PARTITION_PAGE_DEFAULT})",
    )
    status.add_argument("--cursor", help="the next cursor a previous page printed")
    status.set_defaults(func=_status)
    orgs = commands.add_parser(
        "orgs",
        help="every org the service knows, with flags, retention, counts and sweep health",
        description=(
            "One page of the org directory, in byte order of org id; pass the printed "
            "next cursor as --cursor for the next page."
        ),
    )
    orgs.add_argument("--prefix", help="only orgs whose id starts with this")
    orgs.add_argument("--limit", type=int, help="orgs per page (1..200, default 50)")
    orgs.add_argument("--cursor", help="the next cursor a previous page printed")
    orgs.set_defaults(func=_orgs)
    reindex = commands.add_parser(
        "reindex",
        help="re-index chat events for full-text search (after an upgrade; resumable)",
        description=(
            "Rewrite the full-text index of every chat event indexed by an older segmentation "
            "(rows stored before Chinese-aware full-text search). Safe to interrupt and to run "
            "while serving: running it again resumes."
        ),
    )
    reindex.set_defaults(func=_reindex)
    indexes = commands.add_parser(
        "indexes",
        help="search indexes of large orgs: wanted, building (with progress), ready, failed",
        description=(
            "Without --org: every org's search indexes counted by state, and the builder's "
            "queue (running builds first, with their phase and progress). With --org: that "
            "org's indexes, one per model. --watch follows the builds until none is left."
        ),
    )
    indexes.add_argument("--org", dest="org_id", help="only this org's indexes")
    indexes.add_argument(
        "--watch", action="store_true", help="follow the running builds until none is left"
    )
    indexes.set_defaults(func=_indexes)
