"""PgBouncer in transaction pooling mode in front of a test's cluster (Debian's `pgbouncer`,
installed by scripts/setup.sh): on a free port, authenticating as the cluster's own user."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from memory.infrastructure.postgres.embedded import free_port

PGBOUNCER = "/usr/sbin/pgbouncer"
START_DEADLINE_SECONDS = 30
# Server connections per (database, user): enough for three replicas' statements.
POOL_SIZE = 20
# PgBouncer refuses to run as root; as root it runs as this user (the cluster's too).
SERVICE_USER = "postgres"


def _pgbouncer() -> str:
    found = shutil.which("pgbouncer") or (PGBOUNCER if Path(PGBOUNCER).exists() else None)
    assert found is not None, "pgbouncer is not installed: run scripts/setup.sh"
    return found


@contextlib.contextmanager
def pgbouncer(server_url: str, *, pool_size: int = POOL_SIZE) -> Iterator[str]:
    """Run PgBouncer (pool_mode = transaction) for `server_url`'s database, with at most
    `pool_size` server sessions; yield the pooled URL (same user, password and database
    name, PgBouncer's port)."""
    params = conninfo_to_dict(server_url)
    port = free_port()
    # Not under pytest's tmp_path: as root PgBouncer runs as another user, who must read it.
    workdir = Path(tempfile.mkdtemp(prefix="memory-pgbouncer-"))
    user, password, dbname = str(params["user"]), str(params["password"]), str(params["dbname"])
    (workdir / "userlist.txt").write_text(f'"{user}" "{password}"\n')
    (workdir / "pgbouncer.ini").write_text(
        "\n".join(
            [
                "[databases]",
                f"{dbname} = host={params['host']} port={params['port']} dbname={dbname}",
                "[pgbouncer]",
                "listen_addr = 127.0.0.1",
                f"listen_port = {port}",
                f"unix_socket_dir = {workdir}",
                "auth_type = scram-sha-256",
                f"auth_file = {workdir / 'userlist.txt'}",
                "pool_mode = transaction",
                f"default_pool_size = {pool_size}",
                "max_client_conn = 500",
                # A server connection that broke (the cluster restarted) is dropped at once.
                "server_login_retry = 1",
                f"logfile = {workdir / 'pgbouncer.log'}",
                "",
            ]
        )
    )
    argv = [_pgbouncer(), str(workdir / "pgbouncer.ini")]
    if os.geteuid() == 0:
        entry = pwd.getpwnam(SERVICE_USER)
        for path in (workdir, *workdir.iterdir()):
            os.chown(path, entry.pw_uid, entry.pw_gid)
        argv[1:1] = ["-u", SERVICE_USER]
    # It logs to its log file; read on failure.
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = make_conninfo(
        "", host="127.0.0.1", port=port, user=user, password=password, dbname=dbname
    )
    try:
        deadline = time.monotonic() + START_DEADLINE_SECONDS
        while True:
            assert proc.poll() is None, _log(workdir)
            try:
                with psycopg.connect(url, connect_timeout=2) as conn:
                    conn.execute("SELECT 1")
                break
            except psycopg.OperationalError:
                assert time.monotonic() < deadline, _log(workdir)
                time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(workdir, ignore_errors=True)


def _log(workdir: Path) -> str:
    path = workdir / "pgbouncer.log"
    return path.read_text() if path.exists() else "pgbouncer exited without a log"
