"""A private PostgreSQL cluster owned by one `memory` home directory.

`memory serve` without `MEMORY_DATABASE_URL` starts one of these: its data directory lives
under the home, it listens on 127.0.0.1 at a free port and on a socket in a short private
directory, it has the `vector` extension, and it is stopped when the service exits. Several
homes run side by side because nothing is shared between them but the binaries.

One process owns a running cluster (its pid is recorded in the home); only the owner stops
it. A process that finds the cluster running attaches to it, and adopts it if the recorded
owner is gone (killed with -9), so a kill and a restart never leave a cluster without owner
(docs/adr/0048).

`memory db start` runs the cluster on its own (`start_detached`): the recorded owner is then
the PostgreSQL server itself, alive exactly as long as the cluster, so every `memory serve`
attaches and none stops it; only `memory db stop` does (docs/adr/0060).

`initdb` refuses to run as root, so as root the cluster runs as an unprivileged user.

A durable cluster archives its WAL with pgBackRest from its first start (an existing home
from its next start), into `$MEMORY_HOME/backups` unless told otherwise (docs/adr/0105).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from memory.infrastructure.postgres.pgbackrest import (
    BackupRepository,
    ClusterLocation,
    default_repository,
)
from memory.infrastructure.postgres.service_role import ensure_service_role

log = logging.getLogger(__name__)

DATABASE_NAME = "memory"
# The cluster's bootstrap superuser: creates the database, the extension and the service
# role, nothing else. The service connects as SERVICE_ROLE, no superuser (docs/adr/0101).
SUPERUSER = "memory"
SERVICE_ROLE = "memory_service"
SERVICE_USER_CANDIDATES = ("postgres", "memory")
START_TIMEOUT_SECONDS = 60
# A Unix socket path must fit in 107 bytes, so sockets live in a short directory under /tmp.
SOCKET_ROOT = Path("/tmp")


class EmbeddedPostgresError(RuntimeError):
    """The embedded cluster could not be created, started or reached."""


@dataclass(frozen=True)
class ClusterStatus:
    running: bool
    port: int | None
    # Who stops it: "detached" (`memory db stop`), "pid N" (that `memory serve`), or "none".
    owner: str


@dataclass(frozen=True)
class ClusterPaths:
    home: Path
    data: Path
    socket_dir: Path
    log_file: Path
    password_file: Path
    # The service role's password (docs/adr/0101); `password_file` is the superuser's.
    service_password_file: Path
    # Which process owns the running server: "<pid> <process start time>".
    owner_file: Path
    # Held (flock) while a process decides to start, attach to or adopt the server.
    lock_file: Path

    @classmethod
    def for_home(cls, home: Path, server_dir: Path | None = None) -> ClusterPaths:
        """`server_dir` holds what the server itself writes (data, log); by default it is
        `<home>/postgres`."""
        home = home.resolve()
        base = server_dir or home / "postgres"
        data = base / "data"
        digest = hashlib.sha256(str(data).encode()).hexdigest()[:12]
        return cls(
            home=home,
            data=data,
            socket_dir=SOCKET_ROOT / f"memory-pg-{digest}",
            log_file=base / "postgres.log",
            password_file=home / "postgres" / "password",
            service_password_file=home / "postgres" / "service-password",
            owner_file=home / "postgres" / "owner",
            lock_file=home / "postgres" / "lock",
        )


def find_postgres_bindir() -> Path:
    """The newest installed server's bin directory (Debian layout first, then PATH)."""
    candidates = sorted(
        Path("/usr/lib/postgresql").glob("*/bin"),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
        reverse=True,
    )
    for bindir in candidates:
        if (bindir / "initdb").exists() and (bindir / "pg_ctl").exists():
            return bindir
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).parent
    raise EmbeddedPostgresError(
        "no PostgreSQL server binaries found (looked in /usr/lib/postgresql/*/bin and PATH); "
        "run `make run` or scripts/setup.sh to install them, or set MEMORY_DATABASE_URL"
    )


def process_identity(pid: int) -> str | None:
    """`"<pid> <start time>"` of a live process, None if there is none with that pid. The start
    time (clock ticks since boot, /proc/<pid>/stat field 22) tells a reused pid from the
    process that recorded it; without /proc the pid alone is used."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
        return str(pid)
    # The command name (field 2) is in parentheses and may contain spaces.
    fields = stat[stat.rindex(")") + 2 :].split()
    return f"{pid} {fields[19]}"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class EmbeddedPostgres:
    """Create-if-missing, start, and stop one private cluster.

    `start()` attaches to a cluster that is already running for the same home (a second
    process on the same home) and then leaves it running on `stop()`: only the owner, the
    process that started the server, stops it. If the recorded owner is no longer alive, the
    attaching process adopts the server and stops it in its turn.

    `port` fixes the TCP port (and the socket's name) instead of picking a free one, so a
    restarted server is found at the same URL.
    """

    def __init__(
        self,
        home: Path,
        *,
        durable: bool = True,
        port: int | None = None,
        repository: Path | None = None,
        synchronous_standby: bool = False,
        start_timeout: float = START_TIMEOUT_SECONDS,
    ) -> None:
        """A `durable` cluster archives its WAL into `repository` (by default
        `$MEMORY_HOME/backups`); with `synchronous_standby` it acknowledges a commit only
        once its standby has it (docs/adr/0107)."""
        self._durable = durable
        self._bindir = find_postgres_bindir()
        self._run_as = self._service_user()
        self.paths = ClusterPaths.for_home(home, self._server_dir_for(home))
        self._owned = False
        self._fixed_port = port
        self._port: int | None = None
        self._repository = repository
        self._synchronous_standby = synchronous_standby
        self._start_timeout = start_timeout

    @property
    def bindir(self) -> Path:
        return self._bindir

    @property
    def archiving(self) -> bool:
        """Whether the cluster archives its WAL (every durable cluster does)."""
        return self._durable

    @property
    def backups(self) -> BackupRepository:
        """The cluster's pgBackRest repository (its files need not exist yet)."""
        server_dir = self.paths.data.parent
        location = ClusterLocation(
            data=self.paths.data,
            server_dir=server_dir,
            socket_dir=self.paths.socket_dir,
            user=SUPERUSER,
            password=self._password() if self.paths.password_file.exists() else "",
            run_as=self._run_as,
        )
        repository = self._repository or default_repository(self.paths.home, server_dir)
        return BackupRepository(location, repository)

    @property
    def service_user(self) -> str | None:
        """The user the server runs as (None: this process's own)."""
        return self._run_as

    @property
    def password(self) -> str:
        return self._password()

    def clone_from(self, primary_conninfo: str, password: str) -> None:
        """Make this (new) home's cluster a streaming standby of the server
        `primary_conninfo` reaches (`pg_basebackup -R`: a copy of its data, and the settings
        to follow it); `password` is that server's superuser's, for this home's commands."""
        if self.initialised():
            raise EmbeddedPostgresError(f"{self.paths.home} already has a cluster")
        self._prepare_directories()
        old_umask = os.umask(0o077)
        try:
            self.paths.password_file.write_text(password + "\n")
        finally:
            os.umask(old_umask)
        log.info("copying the primary into %s (pg_basebackup)", self.paths.data)
        try:
            self._run(
                [
                    str(self._bindir / "pg_basebackup"),
                    "-D",
                    str(self.paths.data),
                    "-d",
                    primary_conninfo,
                    "--write-recovery-conf",
                    "--wal-method=stream",
                    "--checkpoint=fast",
                ]
            )
        except EmbeddedPostgresError:
            shutil.rmtree(self.paths.data, ignore_errors=True)
            self.paths.password_file.unlink(missing_ok=True)
            raise

    def promote(self) -> bool:
        """Make a running standby the primary; False if it was one already."""
        if not self.in_recovery():
            return False
        with psycopg.connect(self._conninfo("postgres"), autocommit=True) as conn:
            conn.execute("SELECT pg_promote(wait => true)")
        if self._durable and self._port is not None:
            self.backups.ensure_stanza(self._port)
        return True

    def run_as_server(
        self, argv: list[str], *, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """Run a server binary (pg_ctl, pg_basebackup) as the cluster's user."""
        return self._run(argv, check=check)

    def initialised(self) -> bool:
        """Whether the home has a cluster (initdb ran), running or not."""
        return (self.paths.data / "PG_VERSION").exists()

    def running(self) -> bool:
        """Whether a server runs on this home's data directory (`pg_ctl status`)."""
        return self._running_port() is not None

    @property
    def owned(self) -> bool:
        """True if this process started (or adopted) the server and will stop it."""
        return self._owned

    # -- public -----------------------------------------------------------------------------

    @property
    def url(self) -> str:
        if self._port is None:
            raise EmbeddedPostgresError("cluster not started")
        return self._conninfo(DATABASE_NAME)

    def start(self) -> str:
        """Start (or attach to) the cluster, ensure the database and extension; return its URL."""
        self._prepare_directories()
        with self._decision_lock():
            if not (self.paths.data / "PG_VERSION").exists():
                self._initdb()
            running_port = self._running_port()
            if running_port is None:
                self._port = self._fixed_port or free_port()
                self._pg_ctl_start(self._port)
                self._claim_ownership()
            else:
                self._port = running_port
                owner = self._recorded_owner()
                if owner is not None and self._owner_alive(owner):
                    log.info("attaching to running embedded PostgreSQL on port %d", running_port)
                else:
                    log.warning(
                        "adopting running embedded PostgreSQL on port %d: its owner (%s) is "
                        "gone; this process stops it on exit",
                        running_port,
                        f"pid {owner.split()[0]}" if owner else "not recorded",
                    )
                    self._claim_ownership()
        self._ensure_database()
        # A standby is read-only: its role and ownership come with the primary's WAL.
        standby = self.in_recovery()
        if not standby:
            self._ensure_service_role()
        if self._durable and self._port is not None and not standby:
            self.backups.ensure_stanza(self._port)
        return self.url

    def in_recovery(self) -> bool:
        """Whether the running server is a standby (or still replaying WAL)."""
        with psycopg.connect(self._conninfo("postgres"), autocommit=True) as conn:
            row = conn.execute("SELECT pg_is_in_recovery()").fetchone()
        return bool(row and row[0])

    @property
    def service_url(self) -> str:
        """The URL the service uses: its own role, which owns the database and is no
        superuser (`url` is the superuser's, for administration and tests)."""
        if self._port is None:
            raise EmbeddedPostgresError("cluster not started")
        self._service_password_known()
        return self._conninfo(DATABASE_NAME, user=SERVICE_ROLE)

    def _service_password_known(self) -> None:
        """A home cloned as a standby has the primary's roles but not the password file of
        the primary's service role: once promoted, set one; before, say so."""
        if self.paths.service_password_file.exists():
            return
        if self.in_recovery():
            raise EmbeddedPostgresError(
                "this standby has no password of the service role (it is the primary's "
                "home's); promote it (memory db promote) or use the primary's URL"
            )
        self._ensure_service_role()

    def _ensure_service_role(self) -> None:
        """Create the service role (or reset its password to the home's) and hand it the
        database; a home from before the role existed has its objects handed over here."""
        with self._decision_lock():
            if not self.paths.service_password_file.exists():
                old_umask = os.umask(0o077)
                try:
                    self.paths.service_password_file.write_text(secrets.token_urlsafe(24) + "\n")
                finally:
                    os.umask(old_umask)
            moved = ensure_service_role(
                self.url, DATABASE_NAME, SERVICE_ROLE, self._password(SERVICE_ROLE)
            )
        if moved:
            log.info("handed %d objects of the embedded database to role %s", moved, SERVICE_ROLE)

    def start_detached(self) -> str:
        """Start the cluster (or take over a running one) and leave it running after this
        process exits: the server becomes its own owner, so no `memory serve` attaching to it
        stops it. Return its URL."""
        url = self.start()
        with self._decision_lock():
            postmaster = self._postmaster_identity()
            if postmaster is None:
                raise EmbeddedPostgresError("PostgreSQL stopped while being detached")
            self.paths.owner_file.write_text(postmaster + "\n")
        self._owned = False
        return url

    def status(self) -> ClusterStatus:
        """Whether the cluster runs, where, and who stops it."""
        if not self.paths.lock_file.parent.exists():
            return ClusterStatus(running=False, port=None, owner="none")
        with self._decision_lock():
            port = self._running_port()
            if port is None:
                return ClusterStatus(running=False, port=None, owner="none")
            owner = self._recorded_owner()
            postmaster = self._postmaster_identity()
            if owner is not None and owner == postmaster:
                who = "detached"
            elif owner is not None and self._owner_alive(owner):
                who = f"pid {owner.split()[0]}"
            else:
                who = "none"
        self._port = port
        return ClusterStatus(running=True, port=port, owner=who)

    def stop_detached(self, *, force: bool = False) -> bool:
        """Stop a running cluster that `start_detached` left running (or that nobody owns).
        One a live `memory serve` owns is left alone unless `force`. False if it was not
        running."""
        current = self.status()
        if not current.running:
            return False
        if current.owner not in ("detached", "none") and not force:
            raise EmbeddedPostgresError(
                f"the cluster is owned by a running `memory serve` ({current.owner}), which "
                "stops it when it exits; use --force to stop it now"
            )
        self._owned = True
        self._stop_owned(release_any=True)
        return True

    def stop(self) -> None:
        if not self._owned:
            return
        self._stop_owned(release_any=False)

    def _stop_owned(self, *, release_any: bool) -> None:
        with self._decision_lock():
            me = process_identity(os.getpid())
            owner = self._recorded_owner()
            if not release_any and owner is not None and owner != me:
                # `memory db start` detached the cluster while this process owned it: it is
                # no longer this process's to stop.
                log.info("leaving embedded PostgreSQL running: it was detached (memory db start)")
                self._owned = False
                return
            log.info("stopping embedded PostgreSQL (%s)", self.paths.data)
            self._archive_current_segment()
            self._run(
                [
                    str(self._bindir / "pg_ctl"),
                    "stop",
                    "-D",
                    str(self.paths.data),
                    "-m",
                    "fast",
                    "-w",
                ],
                check=False,
            )
            if release_any or self._recorded_owner() == me:
                self.paths.owner_file.unlink(missing_ok=True)
        self._owned = False
        # The server removes its socket and lock file; the empty directory is ours to remove.
        # A directory that is not empty (a server still running) is left alone.
        with contextlib.suppress(OSError):
            self.paths.socket_dir.rmdir()

    def _archive_current_segment(self) -> None:
        """Close the WAL segment in use, so that the server archives it while shutting down
        and a restore can reach the last write before the stop."""
        port = self._running_port()
        if not self._durable or port is None:
            return
        self._port = port
        with (
            contextlib.suppress(psycopg.Error),
            psycopg.connect(self._conninfo("postgres"), autocommit=True) as conn,
        ):
            if conn.execute("SELECT pg_is_in_recovery()").fetchone() != (True,):
                conn.execute("SELECT pg_switch_wal()")

    def __enter__(self) -> EmbeddedPostgres:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- ownership --------------------------------------------------------------------------

    @contextlib.contextmanager
    def _decision_lock(self) -> Iterator[None]:
        """Serialise start/attach/adopt/stop between processes on this home, so two servers
        restarting together neither both start the cluster nor both adopt it."""
        with self.paths.lock_file.open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _recorded_owner(self) -> str | None:
        try:
            return self.paths.owner_file.read_text().strip() or None
        except FileNotFoundError:
            return None

    @staticmethod
    def _owner_alive(owner: str) -> bool:
        pid_text = owner.split()[0]
        if not pid_text.isdigit():
            return False
        return process_identity(int(pid_text)) == owner

    def _postmaster_identity(self) -> str | None:
        """The running server's own identity (`"<pid> <start time>"`), from postmaster.pid."""
        try:
            first = (self.paths.data / "postmaster.pid").read_text().splitlines()[0].strip()
        except (OSError, IndexError):
            return None
        return process_identity(int(first)) if first.isdigit() else None

    def _claim_ownership(self) -> None:
        identity = process_identity(os.getpid())
        assert identity is not None
        self.paths.owner_file.write_text(identity + "\n")
        self._owned = True

    # -- users and directories -------------------------------------------------------------

    @staticmethod
    def _service_user() -> str | None:
        if os.geteuid() != 0:
            return None
        for name in SERVICE_USER_CANDIDATES:
            with contextlib.suppress(KeyError):
                pwd.getpwnam(name)
                return name
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", "memory"],
            check=True,
        )
        return "memory"

    def _server_dir_for(self, home: Path) -> Path | None:
        """As root, a home the service user cannot reach (e.g. under /root) keeps the
        server's data and log in /var/lib/memory/<hash of home> instead; the home then holds
        only the password file."""
        if self._run_as is None:
            return None
        home = home.resolve()
        probe = home
        while not probe.exists():
            probe = probe.parent
        if self._user_can_traverse(probe):
            return None
        digest = hashlib.sha256(str(home).encode()).hexdigest()[:12]
        fallback = Path("/var/lib/memory") / digest
        log.warning(
            "%s is not reachable by user %s; cluster data goes to %s", home, self._run_as, fallback
        )
        return fallback

    def _user_can_traverse(self, path: Path) -> bool:
        result = subprocess.run(
            ["runuser", "-u", str(self._run_as), "--", "test", "-x", str(path)], check=False
        )
        return result.returncode == 0

    def _prepare_directories(self) -> None:
        for d in (self.paths.data.parent, self.paths.password_file.parent):
            d.mkdir(parents=True, exist_ok=True)
        self.paths.socket_dir.mkdir(mode=0o700, exist_ok=True)
        if self._run_as is not None:
            entry = pwd.getpwnam(self._run_as)
            for d in (self.paths.data.parent, self.paths.socket_dir):
                os.chown(d, entry.pw_uid, entry.pw_gid)
            if self.paths.log_file.exists():
                os.chown(self.paths.log_file, entry.pw_uid, entry.pw_gid)
            else:
                self.paths.log_file.touch()
                os.chown(self.paths.log_file, entry.pw_uid, entry.pw_gid)

    # -- cluster lifecycle ------------------------------------------------------------------

    def _password(self, user: str = SUPERUSER) -> str:
        path = self.paths.password_file if user == SUPERUSER else self.paths.service_password_file
        return path.read_text().strip()

    def _initdb(self) -> None:
        log.info("creating embedded PostgreSQL cluster in %s", self.paths.data)
        password = secrets.token_urlsafe(24)
        old_umask = os.umask(0o077)
        try:
            self.paths.password_file.write_text(password + "\n")
        finally:
            os.umask(old_umask)
        # initdb reads the password as the service user, so hand it a private copy.
        with tempfile.NamedTemporaryFile("w", delete=False, dir=self.paths.socket_dir) as pwfile:
            pwfile.write(password + "\n")
        try:
            if self._run_as is not None:
                entry = pwd.getpwnam(self._run_as)
                os.chown(pwfile.name, entry.pw_uid, entry.pw_gid)
            self._run(
                [
                    str(self._bindir / "initdb"),
                    "-D",
                    str(self.paths.data),
                    "-U",
                    SUPERUSER,
                    "--auth=scram-sha-256",
                    f"--pwfile={pwfile.name}",
                    "--encoding=UTF8",
                    "--locale=C.UTF-8",
                    "--no-instructions",
                ]
            )
        finally:
            Path(pwfile.name).unlink(missing_ok=True)

    def _running_port(self) -> int | None:
        pidfile = self.paths.data / "postmaster.pid"
        if not pidfile.exists():
            return None
        status = self._run(
            [str(self._bindir / "pg_ctl"), "status", "-D", str(self.paths.data)], check=False
        )
        if status.returncode != 0:
            return None
        lines = pidfile.read_text().splitlines()
        # postmaster.pid line 4 is the port (see PostgreSQL's pidfile.h).
        return int(lines[3]) if len(lines) > 3 and lines[3].strip().isdigit() else None

    def _pg_ctl_start(self, port: int) -> None:
        options = [
            "-c listen_addresses=127.0.0.1",
            f"-c port={port}",
            f"-c unix_socket_directories={self.paths.socket_dir}",
        ]
        if not self._durable:
            options += ["-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off"]
        else:
            self.backups.prepare(synchronous_standby=self._synchronous_standby)
        log.info("starting embedded PostgreSQL on 127.0.0.1:%d", port)
        result = self._run(
            [
                str(self._bindir / "pg_ctl"),
                "start",
                "-D",
                str(self.paths.data),
                "-w",
                "-t",
                str(int(self._start_timeout)),
                "-l",
                str(self.paths.log_file),
                "-o",
                " ".join(options),
            ],
            check=False,
        )
        if result.returncode != 0:
            tail = self._log_tail()
            raise EmbeddedPostgresError(
                f"PostgreSQL did not start: {result.stderr.strip()}\n{tail}"
            )

    def _log_tail(self, lines: int = 20) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.paths.log_file.read_text().splitlines()[-lines:])
        return ""

    @property
    def tcp_url(self) -> str:
        """The URL over TCP (127.0.0.1), for what cannot use the socket (e.g. PgBouncer on
        another machine's view of it, or a client in a container)."""
        if self._port is None:
            raise EmbeddedPostgresError("cluster not started")
        return self._conninfo(DATABASE_NAME, host="127.0.0.1")

    @property
    def service_tcp_url(self) -> str:
        """`service_url` over TCP (127.0.0.1)."""
        if self._port is None:
            raise EmbeddedPostgresError("cluster not started")
        self._service_password_known()
        return self._conninfo(DATABASE_NAME, host="127.0.0.1", user=SERVICE_ROLE)

    def _conninfo(self, dbname: str, *, host: str | None = None, user: str = SUPERUSER) -> str:
        return make_conninfo(
            "",
            host=host or str(self.paths.socket_dir),
            port=self._port,
            user=user,
            password=self._password(user),
            dbname=dbname,
        )

    def _ensure_database(self) -> None:
        deadline = time.monotonic() + self._start_timeout
        while True:
            try:
                with psycopg.connect(self._conninfo("postgres"), autocommit=True) as conn:
                    exists = conn.execute(
                        "SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE_NAME,)
                    ).fetchone()
                    if not exists:
                        conn.execute(
                            sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DATABASE_NAME))
                        )
                break
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        with psycopg.connect(self.url, autocommit=True) as conn:
            # A standby is read-only and has the extension from its primary.
            if conn.execute("SELECT pg_is_in_recovery()").fetchone() != (True,):
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")

    def _run(self, argv: list[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
        if self._run_as is not None:
            argv = ["runuser", "-u", self._run_as, "--", *argv]
        result = subprocess.run(argv, capture_output=True, text=True, check=False)
        if check and result.returncode != 0:
            raise EmbeddedPostgresError(
                f"{' '.join(argv)} failed ({result.returncode}): {result.stderr.strip()}"
            )
        return result


def with_database(url: str, dbname: str) -> str:
    """`url` pointing at another database of the same server."""
    params = conninfo_to_dict(url)
    params["dbname"] = dbname
    return make_conninfo("", **params)


def create_database(admin_url: str, name: str) -> str:
    """Create database `name` with the `vector` extension on the server `admin_url` reaches;
    return its URL. For tests and benchmarks."""
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = with_database(admin_url, name)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    return url
