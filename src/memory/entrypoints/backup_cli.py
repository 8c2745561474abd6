"""`memory db backup|backups|verify|restore|reapply-erasures|standby|promote`: the
embedded cluster's backups, point-in-time restores and standby (docs/operations.md,
docs/adr/0105-0107).

These act on the home's embedded cluster; on an external PostgreSQL (MEMORY_DATABASE_URL)
they refuse and point to docs/operations.md, where pgBackRest is set up on its host (only
`reapply-erasures` works there too).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory.entrypoints.cli_output import emit, error, wants_json

if TYPE_CHECKING:
    from memory.application.durability.erasure_journal import ReapplyReport
    from memory.infrastructure.postgres.embedded import EmbeddedPostgres
    from memory.infrastructure.postgres.pgbackrest import BackupKind
    from memory.infrastructure.settings import Settings


EXTERNAL = (
    "MEMORY_DATABASE_URL is set: back up and restore that PostgreSQL on its host with "
    "pgBackRest (docs/operations.md); these commands act on the home's embedded cluster"
)


class CommandRefused(Exception):
    """Printed as one line on stderr, exit status 1; nothing was changed."""


def _home_cluster(settings: Settings, *, create: bool = False) -> EmbeddedPostgres:
    from memory.entrypoints.database_url import HomeHasNoDatabase, embedded_cluster

    if settings.database_url:
        raise CommandRefused(EXTERNAL)
    cluster = embedded_cluster(settings)
    if not create and not cluster.initialised():
        raise HomeHasNoDatabase(settings.home)
    return cluster


def _backup(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    settings: Settings = args.settings
    cluster = _home_cluster(settings)
    kind: BackupKind = args.kind
    started_here = not cluster.status().running
    cluster.start()
    bar = None
    if sys.stderr.isatty() and not wants_json():
        bar = tqdm(total=100.0, unit="%", desc=f"{kind} backup", bar_format="{l_bar}{bar}")

    def progress(percent: float) -> None:
        if bar is not None:
            bar.update(percent - bar.n)

    try:
        port = cluster.status().port
        assert port is not None
        backup = cluster.backups.backup(
            kind,
            port=port,
            retention_full=settings.backup_retention_full,
            on_progress=None if bar is None else progress,
        )
        backups = cluster.backups.backups()
    finally:
        if bar is not None:
            bar.close()
        if started_here:
            cluster.stop()
    pruned = _prune_journal(settings, cluster, backups[0].started_at if backups else None)
    emit(
        {
            "backup": _backup_row(asdict(backup)),
            "kept": len(backups),
            "retention_full": settings.backup_retention_full,
            "erasure_records_pruned": pruned,
        }
    )
    return 0


def _prune_journal(settings: Settings, cluster: EmbeddedPostgres, oldest: datetime | None) -> int:
    """No backup restores to before the oldest one: its erasures need no journal."""
    from memory.domain.durability.erasure_record import COMMIT_MARGIN
    from memory.entrypoints.erasure_journal import erasure_journal

    journal = erasure_journal(settings)
    if journal is None or oldest is None:
        return 0
    return journal.prune(oldest - COMMIT_MARGIN)


def _backup_row(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "label": row["label"],
        "type": row["kind"],
        "started_at": row["started_at"],
        "stopped_at": row["stopped_at"],
        "size_bytes": row["size_bytes"],
        "stored_bytes": row["repository_bytes"],
        "restorable_from": row["restorable_from"],
        "restorable_until": row["restorable_until"],
    }


def _backups(args: argparse.Namespace) -> int:
    cluster = _home_cluster(args.settings)
    repository = cluster.backups
    backups = repository.backups()
    emit(
        {
            "repository": repository.repository,
            "backups": [_backup_row(asdict(b)) for b in backups],
            "archived_until": repository.archived_until(),
        }
    )
    return 0


def _verify(args: argparse.Namespace) -> int:
    from memory.infrastructure.postgres.cluster_restore import verify

    cluster = _home_cluster(args.settings)
    checked = verify(cluster)
    emit(
        {
            "verified": True,
            "backup": checked.backup.label,
            "tables_read": checked.tables,
            "rows_read": checked.rows,
            "events_read": checked.events,
            "seconds": round(checked.seconds, 1),
        }
    )
    return 0


def _restore(args: argparse.Namespace) -> int:
    from memory.infrastructure.postgres.cluster_restore import RECOVERY_TIMEOUT_SECONDS, restore
    from memory.infrastructure.postgres.embedded import EmbeddedPostgres

    settings: Settings = args.settings
    _home_cluster(settings)
    cluster = EmbeddedPostgres(
        settings.home,
        repository=settings.backup_repository,
        synchronous_standby=settings.database_synchronous_standby,
        start_timeout=RECOVERY_TIMEOUT_SECONDS,
    )
    target: datetime | None = None if args.latest else args.until
    restored = restore(cluster, target)
    try:
        report = _reapply_erasures(settings, cluster.url, restored.restored_to)
    finally:
        cluster.stop()
    emit(
        {
            "restored_to": restored.restored_to,
            "from_backup": restored.backup.label,
            **_reapplied(report),
        }
    )
    return 0


def _reapply_erasures(settings: Settings, url: str, since: datetime) -> ReapplyReport:
    """Every journaled erasure recorded after `since`, applied again to the database."""
    from memory.application.durability.erasure_journal import ReapplyReport
    from memory.entrypoints.bootstrap import build_services
    from memory.entrypoints.erasure_journal import erasure_journal
    from memory.entrypoints.operator import cli_actor

    journal = erasure_journal(settings)
    if journal is None:
        return ReapplyReport(considered=0, reapplied=0, by_action={})
    # Deletions are re-applied without waiting for a projector (none runs here); `memory
    # serve` projects them when it starts.
    quick = settings.model_copy(update={"projection_wait_timeout": 0.0})
    services = build_services(quick, url)
    try:
        return services.reapply_erasures(journal)(since, actor=cli_actor())
    finally:
        services.close()


def _reapplied(report: ReapplyReport) -> dict[str, Any]:
    return {
        "erasures_reapplied": report.reapplied,
        "erasures_considered": report.considered,
        "reapplied_by_action": report.by_action,
    }


def _reapply(args: argparse.Namespace) -> int:
    """After restoring an external PostgreSQL by other means (docs/operations.md)."""
    from memory.entrypoints.database_url import database_url
    from memory.entrypoints.erasure_journal import erasure_journal

    settings: Settings = args.settings
    if erasure_journal(settings) is None:
        raise CommandRefused(
            "no erasure journal here: set MEMORY_BACKUP_REPOSITORY to the directory the "
            "service journals erasures in"
        )
    with database_url(settings, create=False) as url:
        report = _reapply_erasures(settings, url, args.since)
    emit({"since": args.since, **_reapplied(report)})
    return 0


def _standby(args: argparse.Namespace) -> int:
    from memory.entrypoints.database_url import embedded_cluster
    from memory.infrastructure.postgres.embedded import EmbeddedPostgresError

    settings: Settings = args.settings
    if settings.database_url:
        raise CommandRefused(EXTERNAL)
    target = embedded_cluster(settings)
    if target.initialised():
        raise CommandRefused(f"{settings.home} already has a cluster: give a new MEMORY_HOME")
    conninfo, password = _primary(args.source)
    try:
        target.clone_from(conninfo, password)
        url = target.start_detached()
    except EmbeddedPostgresError as exc:
        raise CommandRefused(f"the standby could not be made: {exc}") from exc
    emit({"standby": str(settings.home), "url": url, "streaming_from": _shown(conninfo)})
    return 0


def _primary(source: str) -> tuple[str, str]:
    """A replication connection string to the primary, and its superuser's password."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    from memory.infrastructure.postgres.embedded import DATABASE_NAME, SUPERUSER, EmbeddedPostgres
    from memory.infrastructure.postgres.pgbackrest import STANDBY_NAME

    if "=" in source or "://" in source:
        params = conninfo_to_dict(source)
        password = str(params.get("password") or "")
        if not password:
            raise CommandRefused("--from: the URL must carry the password (password=...)")
    else:
        home = Path(source).expanduser().absolute()
        primary = EmbeddedPostgres(home)
        if not primary.initialised():
            raise CommandRefused(f"--from: no cluster under {home}")
        status = primary.status()
        if not status.running:
            raise CommandRefused(f"--from: the cluster under {home} is not running")
        password = primary.password
        params = conninfo_to_dict(primary.url)
    params.update({"application_name": STANDBY_NAME, "dbname": DATABASE_NAME})
    params.setdefault("user", SUPERUSER)
    return make_conninfo("", **{k: str(v) for k, v in params.items()}), password


def _shown(conninfo: str) -> str:
    from psycopg.conninfo import conninfo_to_dict

    params = conninfo_to_dict(conninfo)
    return f"{params.get('host')}:{params.get('port')}"


def _promote(args: argparse.Namespace) -> int:
    cluster = _home_cluster(args.settings)
    if not cluster.status().running:
        raise CommandRefused("the standby is not running (memory db start)")
    promoted = cluster.promote()
    emit({"promoted": promoted, "primary": str(cluster.paths.home)})
    return 0


def _refusals(command: Any) -> Any:
    def run(args: argparse.Namespace) -> int:
        from memory.infrastructure.postgres.cluster_restore import RestoreRefused
        from memory.infrastructure.postgres.pgbackrest import BackupError

        try:
            return int(command(args))
        except (CommandRefused, RestoreRefused) as exc:
            error(f"db {args.db_command}: {exc}")
            return 1
        except BackupError as exc:
            error(f"db {args.db_command}: {exc}")
            return 1

    return run


def _timestamp(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not a time: {text!r} (ISO 8601 with a zone, e.g. 2026-12-01T10:00:00+00:00)"
        ) from None
    if value.tzinfo is None:
        raise argparse.ArgumentTypeError(f"{text!r} has no time zone (add +00:00 for UTC)")
    return value


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    backup = commands.add_parser(
        "backup", help="an online backup into the home's repository (pgBackRest)"
    )
    kinds = backup.add_mutually_exclusive_group()
    for kind, meaning in (
        ("full", "everything (the default)"),
        ("diff", "what changed since the last full backup"),
        ("incr", "what changed since the last backup"),
    ):
        kinds.add_argument(f"--{kind}", dest="kind", action="store_const", const=kind, help=meaning)
    backup.set_defaults(func=_refusals(_backup), kind="full")
    listing = commands.add_parser(
        "backups", help="list backups: type, start, stop, size, what each can restore to"
    )
    listing.set_defaults(func=_refusals(_backups))
    check = commands.add_parser(
        "verify", help="restore the newest backup into a temporary place and read it all"
    )
    check.set_defaults(func=_refusals(_verify))
    back = commands.add_parser(
        "restore", help="restore the stopped home's cluster to a moment; re-apply later erasures"
    )
    when = back.add_mutually_exclusive_group(required=True)
    when.add_argument("--latest", action="store_true", help="the last archived moment")
    when.add_argument(
        "--until", type=_timestamp, metavar="TIMESTAMP", help="ISO 8601 with a time zone"
    )
    back.set_defaults(func=_refusals(_restore))
    again = commands.add_parser(
        "reapply-erasures",
        help="apply again every erasure journaled since a moment (after restoring a database)",
    )
    again.add_argument(
        "--since", type=_timestamp, required=True, metavar="TIMESTAMP", help="the restore's target"
    )
    again.set_defaults(func=_refusals(_reapply))
    standby = commands.add_parser(
        "standby", help="make this (new) home a streaming hot standby of another"
    )
    standby.add_argument(
        "--from", dest="source", required=True, metavar="HOME-or-URL", help="the primary"
    )
    standby.set_defaults(func=_refusals(_standby))
    promote = commands.add_parser("promote", help="make this home's standby the primary")
    promote.set_defaults(func=_refusals(_promote))
