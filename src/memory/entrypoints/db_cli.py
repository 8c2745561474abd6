"""`memory db start|stop|status|url`: the home's embedded cluster, run on its own (and
its backups, restores and standby: backup_cli).

A cluster started here outlives the command and belongs to no server: several `memory
serve` processes (and tests, benchmarks) share it through `MEMORY_DATABASE_URL`, and none
of them stops it when it exits; `memory db stop` does (docs/adr/0060).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from memory.entrypoints import backup_cli
from memory.entrypoints.cli_output import emit, wants_json

if TYPE_CHECKING:
    from memory.infrastructure.postgres.embedded import EmbeddedPostgres
    from memory.infrastructure.settings import Settings


# `memory db status` and `memory db url` exit with this when the cluster is not running (as
# `pg_ctl status` does), so scripts can tell "stopped" from a failure.
EXIT_NOT_RUNNING = 3


def _cluster(args: argparse.Namespace) -> EmbeddedPostgres:
    from memory.entrypoints.database_url import embedded_cluster

    settings: Settings = args.settings
    return embedded_cluster(settings, port=getattr(args, "port", None))


def _start(args: argparse.Namespace) -> int:
    from memory.infrastructure.postgres.embedded import EmbeddedPostgresError

    cluster = _cluster(args)
    try:
        cluster.start_detached()
    except EmbeddedPostgresError as exc:
        print(f"memory db start: {exc}", file=sys.stderr)
        return 1
    _print_url(cluster.service_tcp_url if args.tcp else cluster.service_url)
    return 0


def _print_url(url: str) -> None:
    """Bare, so that `export MEMORY_DATABASE_URL="$(memory db url)"` works; a JSON document
    with `--json`. The service role's URL, as `memory serve` on the home uses: servers
    sharing a cluster must all be that role, or one's tables are another's to alter
    (docs/adr/0101)."""
    if wants_json():
        emit({"url": url})
    else:
        print(url)


def _stop(args: argparse.Namespace) -> int:
    from memory.infrastructure.postgres.embedded import EmbeddedPostgresError

    cluster = _cluster(args)
    try:
        stopped = cluster.stop_detached(force=args.force)
    except EmbeddedPostgresError as exc:
        print(f"memory db stop: {exc}", file=sys.stderr)
        return 1
    if wants_json():
        emit({"stopped": stopped})
    else:
        print("stopped" if stopped else "not running", file=sys.stderr)
    return 0


def _status(args: argparse.Namespace) -> int:
    cluster = _cluster(args)
    status = cluster.status()
    emit(
        {
            "running": status.running,
            "port": status.port,
            "owner": status.owner,
            "data_directory": str(cluster.paths.data),
        }
    )
    return 0 if status.running else EXIT_NOT_RUNNING


def _url(args: argparse.Namespace) -> int:
    from memory.infrastructure.postgres.embedded import EmbeddedPostgresError

    cluster = _cluster(args)
    if not cluster.status().running:
        print("memory db url: the cluster is not running (memory db start)", file=sys.stderr)
        return EXIT_NOT_RUNNING
    try:
        _print_url(cluster.service_tcp_url if args.tcp else cluster.service_url)
    except EmbeddedPostgresError as exc:
        print(f"memory db url: {exc}", file=sys.stderr)
        return 1
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    db = sub.add_parser("db", help="run the embedded PostgreSQL cluster on its own")
    commands = db.add_subparsers(dest="db_command", required=True)
    start = commands.add_parser(
        "start", help="start the home's cluster in the background; print its URL"
    )
    start.add_argument("--port", type=int, default=None, help="TCP port (default: a free one)")
    start.add_argument("--tcp", action="store_true", help="print the URL over 127.0.0.1")
    start.set_defaults(func=_start)
    stop = commands.add_parser("stop", help="stop the home's cluster")
    stop.add_argument(
        "--force", action="store_true", help="stop it even if a `memory serve` owns it"
    )
    stop.set_defaults(func=_stop)
    status = commands.add_parser("status", help="whether it runs, its port and its owner")
    status.set_defaults(func=_status)
    url = commands.add_parser("url", help="print the running cluster's MEMORY_DATABASE_URL")
    url.add_argument("--tcp", action="store_true", help="over 127.0.0.1 instead of the socket")
    url.set_defaults(func=_url)
    backup_cli.register(commands)
