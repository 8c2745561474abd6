"""The embedded cluster's backup repository, kept by pgBackRest (Debian's `pgbackrest`).

Every durable embedded cluster archives its WAL from creation (`archive_command` runs
`pgbackrest archive-push`), into a repository at `$MEMORY_HOME/backups` by default
(`MEMORY_BACKUP_REPOSITORY`). Backups, the listing, restores and the repository check are
pgBackRest's commands run as the cluster's user with a configuration file of the home's own
(`<server dir>/pgbackrest.conf`), so nothing reads `/etc/pgbackrest.conf` and two homes never
share a lock or a log (docs/adr/0105).
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import re
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

STANZA = "memory"
# The server's own settings for archiving and a synchronous standby, included from
# postgresql.conf and rewritten at every start (so a changed setting applies on the next).
SERVER_SETTINGS_FILE = "memory.durability.conf"
INCLUDE_LINE = f"include_if_exists = '{SERVER_SETTINGS_FILE}'"
# A segment is archived when it fills or after this many seconds: what a restore can reach
# lags the last write by at most this much while the cluster runs (a clean stop archives
# everything, see EmbeddedPostgres.stop).
ARCHIVE_TIMEOUT_SECONDS = 60
# The application name a standby connects with; the primary waits for it when synchronous.
STANDBY_NAME = "memory_standby"
BackupKind = Literal["full", "diff", "incr"]
PROGRESS = re.compile(r"\(([\d.]+[KMGT]?B), ([\d.]+)%\)")


class BackupError(RuntimeError):
    """A pgBackRest command failed; the message is its own, first line first."""


@dataclass(frozen=True, slots=True)
class Backup:
    """One backup set in the repository, as `memory db backups` lists it. A backup restores
    to any moment from its stop to the end of the archived WAL (`restorable_until`)."""

    label: str
    kind: str
    started_at: datetime
    stopped_at: datetime
    size_bytes: int
    repository_bytes: int
    restorable_from: datetime
    restorable_until: datetime | None


@dataclass(frozen=True, slots=True)
class ClusterLocation:
    """Where pgBackRest finds the cluster: its files, and how to connect to it."""

    data: Path
    server_dir: Path
    socket_dir: Path
    user: str
    password: str
    run_as: str | None


def default_repository(home: Path, server_dir: Path) -> Path:
    """`$MEMORY_HOME/backups`; beside the data when the cluster lives outside the home
    (a home its user cannot reach, as root under /root)."""
    home = home.resolve()
    return home / "backups" if server_dir == home / "postgres" else server_dir / "backups"


class BackupRepository:
    """pgBackRest's commands for one embedded cluster and its repository."""

    def __init__(self, cluster: ClusterLocation, repository: Path) -> None:
        self.cluster = cluster
        self.repository = repository
        self._tool = cluster.server_dir / "pgbackrest"
        self.config_file = cluster.server_dir / "pgbackrest.conf"
        self._passfile = self._tool / "pgpass"

    # -- the server's side ---------------------------------------------------------------

    def server_settings(self, *, synchronous_standby: bool) -> dict[str, str]:
        """postgresql.conf settings: archive every WAL segment into the repository; with
        `synchronous_standby`, acknowledge a commit only once the standby has it on disk."""
        tool = shutil.which("pgbackrest") or "pgbackrest"
        command = f"{tool} --config={self.config_file} --stanza={STANZA} archive-push %p"
        settings = {
            "wal_level": "replica",
            "archive_mode": "on",
            "archive_command": command,
            "archive_timeout": str(ARCHIVE_TIMEOUT_SECONDS),
            "max_wal_senders": "10",
            "wal_keep_size": "256MB",
            "hot_standby": "on",
        }
        if synchronous_standby:
            settings["synchronous_standby_names"] = f"FIRST 1 ({STANDBY_NAME})"
            settings["synchronous_commit"] = "on"
        return settings

    def prepare(self, *, synchronous_standby: bool) -> None:
        """Write pgBackRest's configuration and the server's settings file, include it from
        postgresql.conf, and make the repository the cluster's user's. Before every start."""
        self._write_config()
        settings = self.server_settings(synchronous_standby=synchronous_standby)
        lines = [f"{key} = '{value}'" for key, value in settings.items()]
        header = "# Written by memory at every start (docs/adr/0105); edits are overwritten.\n"
        self._write_private(self.cluster.data / SERVER_SETTINGS_FILE, header + "\n".join(lines))
        conf = self.cluster.data / "postgresql.conf"
        text = conf.read_text()
        if INCLUDE_LINE not in text:
            conf.write_text(text.rstrip("\n") + f"\n{INCLUDE_LINE}\n")

    def _write_config(self) -> None:
        """pgBackRest's configuration for this home, as it is now: before every command, so
        a copied or moved home never acts on the paths of the one it came from."""
        for directory in (self._tool, self._tool / "lock", self._tool / "log", self.repository):
            directory.mkdir(parents=True, exist_ok=True)
            self._chown(directory)
        self._write_private(self.config_file, self._config_text())
        self._write_private(self._passfile, f"*:*:*:{self.cluster.user}:{self.cluster.password}\n")

    def _config_text(self) -> str:
        return (
            "[global]\n"
            f"repo1-path={self.repository}\n"
            f"lock-path={self._tool / 'lock'}\n"
            f"log-path={self._tool / 'log'}\n"
            "log-level-file=off\n"
            "log-level-console=warn\n"
            "log-level-stderr=off\n"
            "start-fast=y\n"
            "compress-type=lz4\n"
            f"\n[{STANZA}]\n"
            f"pg1-path={self.cluster.data}\n"
            f"pg1-socket-path={self.cluster.socket_dir}\n"
            f"pg1-user={self.cluster.user}\n"
        )

    # -- commands --------------------------------------------------------------------------

    def has_stanza(self) -> bool:
        return (self.repository / "backup" / STANZA / "backup.info").exists()

    def ensure_stanza(self, port: int) -> None:
        """Create the repository's stanza for this cluster once (idempotent)."""
        if not self.has_stanza():
            self.run(["stanza-create"], port=port)

    def backup(
        self,
        kind: BackupKind,
        *,
        port: int,
        retention_full: int,
        on_progress: Callable[[float], None] | None = None,
    ) -> Backup:
        """An online backup of the running cluster, then expire what retention no longer
        keeps (older full backups, their differentials and incrementals, and their WAL)."""
        options = [f"--type={kind}", f"--repo1-retention-full={retention_full}"]
        if on_progress is None:
            self.run(["backup", *options], port=port)
        else:
            self._backup_with_progress(options, port, on_progress)
        return self.backups()[-1]

    def _backup_with_progress(
        self, options: list[str], port: int, on_progress: Callable[[float], None]
    ) -> None:
        self._write_config()
        argv = self._argv(["backup", *options, "--log-level-console=detail"], port=port)
        with subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=self._env()
        ) as proc:
            assert proc.stdout is not None
            lines: list[str] = []
            for line in proc.stdout:
                if (match := PROGRESS.search(line)) is not None:
                    on_progress(float(match.group(2)))
                elif "ERROR" in line or lines:
                    lines.append(line.strip())
            if proc.wait() != 0:
                raise BackupError(_message(proc.returncode, "\n".join(lines)))

    def expire(self, retention_full: int) -> None:
        self.run(["expire", f"--repo1-retention-full={retention_full}"])

    def info(self) -> Mapping[str, Any]:
        """pgBackRest's `info` for the stanza, as JSON; `BackupError` naming the problem
        when the repository is missing, unreadable or corrupt."""
        if not (self.repository / "backup").exists():
            raise BackupError(f"no backup repository at {self.repository}")
        out = self.run(["info", "--output=json"])
        try:
            stanzas = json.loads(out)
            stanza: Mapping[str, Any] = stanzas[0]
        except (ValueError, IndexError, KeyError) as exc:
            raise BackupError(f"pgbackrest info gave no stanza: {out[:200]!r}") from exc
        status = stanza.get("status", {})
        if status.get("code", 0) not in (0, 2):  # 2: no backups yet
            raise BackupError(
                f"the backup repository at {self.repository} is not usable: "
                f"{status.get('message', 'unknown status')}"
            )
        return stanza

    def backups(self) -> list[Backup]:
        """Oldest first."""
        stanza = self.info()
        until = self.archived_until()
        result = []
        for item in stanza.get("backup", []):
            stopped = _at(item["timestamp"]["stop"])
            # pgBackRest keeps whole seconds: the backup is consistent within the next one.
            earliest = stopped + timedelta(seconds=1)
            result.append(
                Backup(
                    label=item["label"],
                    kind=item["type"],
                    started_at=_at(item["timestamp"]["start"]),
                    stopped_at=stopped,
                    size_bytes=int(item["info"]["size"]),
                    repository_bytes=int(item["info"]["repository"]["delta"]),
                    restorable_from=earliest,
                    restorable_until=max(until or earliest, earliest),
                )
            )
        return result

    def last_backup_stopped(self) -> float | None:
        """When the newest backup in the repository finished (Unix time), from pgBackRest's
        own `backup.info`: a file read, no command run (for /metrics, on every scrape)."""
        try:
            text = (self.repository / "backup" / STANZA / "backup.info").read_text()
        except OSError:
            return None
        stops: list[float] = []
        section = ""
        for line in text.splitlines():
            if line.startswith("["):
                section = line.strip()
            elif section == "[backup:current]" and "=" in line:
                with contextlib.suppress(ValueError, TypeError, KeyError):
                    stops.append(float(json.loads(line.split("=", 1)[1])["backup-timestamp-stop"]))
        return max(stops) if stops else None

    def archived_until(self) -> datetime | None:
        """When the newest archived WAL segment reached the repository: nothing written
        after it can be restored yet (at most ARCHIVE_TIMEOUT_SECONDS while running)."""
        newest: float | None = None
        for path in (self.repository / "archive" / STANZA).glob("*/*/*"):
            if path.name.startswith("0") and "." in path.name and len(path.name) > 24:
                mtime = path.stat().st_mtime
                newest = mtime if newest is None else max(newest, mtime)
        return None if newest is None else datetime.fromtimestamp(newest, UTC)

    def restore(self, into: Path, target: datetime | None) -> None:
        """Restore into the empty directory `into`: to `target` (the newest backup stopped
        before it, then WAL up to it), or to the end of the archive when None."""
        options = [f"--pg1-path={into}", self._restore_command()]
        if target is not None:
            stamp = target.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f+00")
            options += ["--type=time", f"--target={stamp}", "--target-action=promote"]
        self.run(["restore", *options])

    def restore_immediate(self, into: Path) -> None:
        """Restore the newest backup into `into`, recovering only to its consistent end
        (its restore_command names `into`, where this copy stays)."""
        self.run(["restore", f"--pg1-path={into}", "--type=immediate", "--target-action=promote"])

    def _restore_command(self) -> str:
        """pgBackRest would write the restore's own options (the directory restored into,
        renamed afterwards) into the server's restore_command: give it the home's."""
        tool = shutil.which("pgbackrest") or "pgbackrest"
        command = f'{tool} --config={self.config_file} --stanza={STANZA} archive-get %f "%p"'
        return f"--recovery-option=restore_command={command}"

    def verify(self) -> None:
        """pgBackRest's own check of every file's checksum in the repository."""
        self.run(["verify"])

    def run(self, command: Sequence[str], *, port: int | None = None) -> str:
        require_pgbackrest()
        self._write_config()
        argv = self._argv(command, port=port)
        result = subprocess.run(argv, capture_output=True, text=True, env=self._env(), check=False)
        if result.returncode != 0:
            raise BackupError(_message(result.returncode, result.stderr or result.stdout))
        return result.stdout

    def _argv(self, command: Sequence[str], *, port: int | None) -> list[str]:
        argv = ["pgbackrest", f"--config={self.config_file}", f"--stanza={STANZA}"]
        if port is not None:
            argv.append(f"--pg1-port={port}")
        argv = [*argv, "--log-level-stderr=error", *command]
        if self.cluster.run_as is not None:
            argv = ["runuser", "-u", self.cluster.run_as, "--", *argv]
        return argv

    def _env(self) -> dict[str, str]:
        return {**os.environ, "PGPASSFILE": str(self._passfile)}

    def _write_private(self, path: Path, text: str) -> None:
        old = os.umask(0o077)
        try:
            path.write_text(text)
        finally:
            os.umask(old)
        self._chown(path)

    def _chown(self, path: Path) -> None:
        if self.cluster.run_as is not None:
            entry = pwd.getpwnam(self.cluster.run_as)
            with contextlib.suppress(PermissionError):
                os.chown(path, entry.pw_uid, entry.pw_gid)


def require_pgbackrest() -> None:
    """`BackupError` saying how to install pgBackRest when it is not on PATH."""
    if shutil.which("pgbackrest") is None:
        raise BackupError(
            "pgBackRest is not installed (the embedded cluster archives its WAL with it): "
            "run scripts/setup.sh (`make run` does), or `apt-get install pgbackrest`"
        )


def _at(epoch: int) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


def _message(status: int, output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if "ERROR" in line] or lines
    text = "; ".join(errors[:3]) or "no output"
    return f"pgbackrest failed (status {status}): {text}"
