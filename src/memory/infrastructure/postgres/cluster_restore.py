"""Restoring the embedded cluster from its pgBackRest repository, and checking a backup by
restoring it somewhere else (`memory db restore`, `memory db verify`).

A restore never works in place: pgBackRest restores into a directory beside the data, the
server replays WAL there up to the target and promotes, and only then does it replace the
data directory. Anything refused or failing before that leaves the home exactly as it was
(docs/adr/0105).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from memory.infrastructure.postgres.embedded import (
    DATABASE_NAME,
    SUPERUSER,
    EmbeddedPostgres,
    EmbeddedPostgresError,
    free_port,
)
from memory.infrastructure.postgres.pgbackrest import Backup, BackupError

# Replaying a day of WAL can take minutes; a restore waits this long for the server.
RECOVERY_TIMEOUT_SECONDS = 1800
POLL_SECONDS = 0.2
STAGING = "data.restore"
REPLACED = "data.replaced"


class RestoreRefused(Exception):
    """The restore (or verify) cannot be done as asked; nothing was changed."""


@dataclass(frozen=True, slots=True)
class RestoredCluster:
    backup: Backup
    # The moment the restored database reflects: the target, or the last replayed commit.
    restored_to: datetime


def check_target(backups: list[Backup], target: datetime | None, now: datetime) -> Backup:
    """The backup a restore to `target` (None: the end of the archive) starts from;
    `RestoreRefused` naming why there is none."""
    if not backups:
        raise RestoreRefused("the backup repository holds no backup yet (memory db backup)")
    if target is None:
        return backups[-1]
    if target.tzinfo is None:
        raise RestoreRefused("--until: give a time zone (e.g. 2026-12-01T10:00:00+00:00)")
    if target > now:
        raise RestoreRefused(f"--until: {target.isoformat()} is in the future")
    oldest = backups[0]
    if target < oldest.restorable_from:
        raise RestoreRefused(
            f"--until: {target.isoformat()} is before the oldest backup can restore to "
            f"({oldest.restorable_from.isoformat()}, backup {oldest.label})"
        )
    usable = [b for b in backups if b.restorable_from <= target]
    return usable[-1]


def refuse_running(cluster: EmbeddedPostgres) -> None:
    status = cluster.status()
    if status.running:
        who = {"detached": "memory db start", "none": "no recorded owner"}.get(
            status.owner, status.owner
        )
        raise RestoreRefused(
            f"the cluster under {cluster.paths.home} is running ({who}, port {status.port}): "
            "stop every `memory serve` on it (and `memory db stop`) first"
        )


def restore(cluster: EmbeddedPostgres, target: datetime | None) -> RestoredCluster:
    """Restore the stopped `cluster` to `target` (None: the latest archived moment) and
    leave it running, owned by this process (stop it when done)."""
    if not cluster.paths.password_file.exists():
        raise RestoreRefused(f"no cluster under {cluster.paths.home} (no password file)")
    refuse_running(cluster)
    repository = cluster.backups
    try:
        backup = check_target(repository.backups(), target, datetime.now(UTC))
    except BackupError as exc:
        raise RestoreRefused(str(exc)) from exc
    data = cluster.paths.data
    staging, replaced = data.parent / STAGING, data.parent / REPLACED
    for leftover in (staging, replaced):
        shutil.rmtree(leftover, ignore_errors=True)
    _private_directory(staging, cluster)
    try:
        repository.restore(staging, target)
    except BackupError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise RestoreRefused(f"the restore failed, nothing was changed: {exc}") from exc
    had_data = data.exists()
    if had_data:
        data.rename(replaced)
    staging.rename(data)
    try:
        cluster.start()
        replayed_to = _wait_for_promotion(cluster)
    except (EmbeddedPostgresError, psycopg.Error, TimeoutError) as exc:
        _put_back(cluster, replaced if had_data else None)
        raise RestoreRefused(
            f"recovery did not reach {target.isoformat() if target else 'the archive end'}"
            f", nothing was changed: {exc}"
        ) from exc
    shutil.rmtree(replaced, ignore_errors=True)
    restored_to = target or replayed_to or repository.archived_until() or backup.stopped_at
    return RestoredCluster(backup=backup, restored_to=restored_to)


def _wait_for_promotion(cluster: EmbeddedPostgres) -> datetime | None:
    """Until the server leaves recovery; the time of the last transaction it replayed."""
    deadline = time.monotonic() + RECOVERY_TIMEOUT_SECONDS
    while cluster.in_recovery():
        if not cluster.running():
            raise EmbeddedPostgresError("the server stopped during recovery")
        if time.monotonic() > deadline:
            raise TimeoutError(f"still recovering after {RECOVERY_TIMEOUT_SECONDS} s")
        time.sleep(POLL_SECONDS)
    with psycopg.connect(cluster.url) as conn:
        row = conn.execute("SELECT pg_last_xact_replay_timestamp()").fetchone()
    return row[0] if row else None


def _put_back(cluster: EmbeddedPostgres, replaced: Path | None) -> None:
    """Undo a restore whose recovery failed: the home's data as it was."""
    with contextlib.suppress(EmbeddedPostgresError):
        cluster.stop_detached(force=True)
    shutil.rmtree(cluster.paths.data, ignore_errors=True)
    if replaced is not None:
        replaced.rename(cluster.paths.data)


def _private_directory(path: Path, cluster: EmbeddedPostgres) -> None:
    path.mkdir(mode=0o700)
    user = cluster.service_user
    if user is not None:
        entry = pwd.getpwnam(user)
        os.chown(path, entry.pw_uid, entry.pw_gid)


# -- verify ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class VerifiedBackup:
    backup: Backup
    tables: int
    rows: int
    events: int
    seconds: float


def verify(cluster: EmbeddedPostgres) -> VerifiedBackup:
    """Check every file of the repository (pgBackRest's checksums), restore the newest
    backup into a temporary directory, start it there (archiving off: it must not write
    into the repository), and read every table of the service and the whole event store."""
    started = time.monotonic()
    repository = cluster.backups
    try:
        backups = repository.backups()
        if not backups:
            raise RestoreRefused("the backup repository holds no backup yet (memory db backup)")
        repository.verify()
    except BackupError as exc:
        raise RestoreRefused(str(exc)) from exc
    with _scratch_server(cluster) as url:
        tables, rows, events = _read_everything(url)
    return VerifiedBackup(backups[-1], tables, rows, events, time.monotonic() - started)


@contextlib.contextmanager
def _scratch_server(cluster: EmbeddedPostgres) -> Iterator[str]:
    scratch = Path(tempfile.mkdtemp(prefix="verify-", dir=cluster.paths.data.parent))
    scratch.chmod(0o755)
    data = scratch / "data"
    try:
        if cluster.service_user is not None:
            entry = pwd.getpwnam(cluster.service_user)
            os.chown(scratch, entry.pw_uid, entry.pw_gid)
        _private_directory(data, cluster)
        try:
            cluster.backups.restore_immediate(data)
        except BackupError as exc:
            raise RestoreRefused(f"the newest backup does not restore: {exc}") from exc
        port = free_port()
        options = (
            f"-c port={port} -c listen_addresses='' -c unix_socket_directories={scratch}"
            " -c archive_mode=off"
        )
        pg_ctl = str(cluster.bindir / "pg_ctl")
        log_file = scratch / "postgres.log"
        result = cluster.run_as_server(
            [pg_ctl, "start", "-D", str(data), "-w", "-l", str(log_file), "-o", options],
            check=False,
        )
        if result.returncode != 0:
            raise RestoreRefused(f"the restored backup does not start: {_tail(log_file)}")
        url = make_conninfo(
            "",
            host=str(scratch),
            port=port,
            user=SUPERUSER,
            password=cluster.password,
            dbname=DATABASE_NAME,
        )
        try:
            _wait_consistent(url, log_file)
            yield url
        finally:
            cluster.run_as_server(
                [pg_ctl, "stop", "-D", str(data), "-m", "immediate", "-w"], check=False
            )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _wait_consistent(url: str, log_file: Path) -> None:
    deadline = time.monotonic() + RECOVERY_TIMEOUT_SECONDS
    while True:
        try:
            with psycopg.connect(url) as conn:
                row = conn.execute("SELECT pg_is_in_recovery()").fetchone()
            if row == (False,):
                return
        except psycopg.OperationalError as exc:
            if time.monotonic() > deadline:
                raise RestoreRefused(f"the restored backup never opened: {exc}") from exc
        if time.monotonic() > deadline:
            raise RestoreRefused("the restored backup was still recovering: " + _tail(log_file))
        time.sleep(POLL_SECONDS)


def _read_everything(url: str) -> tuple[int, int, int]:
    """Every table of the public schema read to its last row (and every stored event's
    state, which may live out of line): (tables, rows, events)."""
    tables = rows = events = 0
    with psycopg.connect(url) as conn:
        names = [
            str(r[0])
            for r in conn.execute(
                "SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace"
                " AND relkind IN ('r', 'p') ORDER BY relname"
            ).fetchall()
        ]
        if "memory_schema_migrations" not in names:
            raise RestoreRefused("the restored backup holds no tables of the service")
        # The event store's tables (the eventsourcing library's): a stored event's state.
        event_tables = {
            str(r[0])
            for r in conn.execute(
                "SELECT table_name FROM information_schema.columns"
                " WHERE table_schema = 'public' AND column_name IN ('state', 'topic')"
                " GROUP BY table_name HAVING count(*) = 2"
            ).fetchall()
        }
        for name in names:
            table = sql.Identifier(name)
            if name in event_tables:
                query = sql.SQL("SELECT count(*), coalesce(sum(octet_length(state)), 0) FROM {}")
                row = conn.execute(query.format(table)).fetchone()
                events += int(row[0]) if row else 0
            else:
                query = sql.SQL("SELECT count(*), sum(pg_column_size(t.*)) FROM {} AS t")
                row = conn.execute(query.format(table)).fetchone()
            rows += int(row[0]) if row else 0
            tables += 1
    return tables, rows, events


def _tail(log_file: Path, lines: int = 5) -> str:
    with contextlib.suppress(OSError):
        return " | ".join(log_file.read_text().splitlines()[-lines:])
    return ""
