"""`memory` command line: `serve`, plus each context's operator commands."""

from __future__ import annotations

import argparse
import logging
import signal
import socket
import sys
from collections.abc import Sequence
from types import FrameType
from typing import TYPE_CHECKING

from pydantic import ValidationError

from memory.application.errors import DatabaseUnavailable
from memory.domain.errors import InvalidInput
from memory.entrypoints import cli_output
from memory.entrypoints.cli_arguments import check_arguments, command_arguments, refusal
from memory.entrypoints.cli_refusal import CommandRefused
from memory.infrastructure import build_info

# What only a command that runs needs (settings, the database, tracing, progress bars) is
# imported when it runs: a refused argument is answered before any of it loads (about 0.5 s
# of CPU a process; docs/adr/0160).
if TYPE_CHECKING:
    from memory.infrastructure.settings import Settings

log = logging.getLogger("memory")

# On SIGTERM, requests in flight get this long to finish (the README promises it).
DRAIN_SECONDS = 10


class ShutdownRequested(Exception):
    """SIGTERM arrived. uvicorn shuts down gracefully, then re-raises the signal it captured;
    turning that into an exception lets `finally` blocks (stopping the embedded cluster) run
    instead of the process dying on the default handler."""


def _raise_shutdown(signum: int, frame: object) -> None:
    raise ShutdownRequested


def _serve(args: argparse.Namespace) -> int:
    from memory.entrypoints.serve_port import PortUnavailable, listening_socket

    settings: Settings = args.settings
    # The port first: when it is taken, nothing else may start (docs/adr/0132).
    try:
        listener = listening_socket(args.host, args.port)
    except PortUnavailable as exc:
        cli_output.error(str(exc))
        return 2
    with listener:
        return _serve_on(args, listener, settings)


def _serve_on(args: argparse.Namespace, listener: socket.socket, settings: Settings) -> int:
    import uvicorn

    from memory.entrypoints.admin_key import ensure_admin_key
    from memory.entrypoints.backup_age import install_backup_age
    from memory.entrypoints.bootstrap import Services, build_services
    from memory.entrypoints.database_url import database_url
    from memory.entrypoints.http.app import create_app, request_shutdown
    from memory.infrastructure import tracing

    signal.signal(signal.SIGTERM, _raise_shutdown)
    install_backup_age(settings)
    # Before any pool opens, so that every connection's statements are traced.
    tracer_provider = tracing.configure(settings)
    with database_url(settings) as url:
        try:
            preflight(settings, url)
        except DatabaseUnavailable:
            log.warning(
                "the database cannot be reached yet: /healthz and /v1 answer 503 until it "
                "can; then migrations run and the service starts, without a restart"
            )

        def build() -> Services:
            services = build_services(settings, url)
            try:
                ensure_admin_key(services)
            except BaseException:
                services.close()
                raise
            return services

        fatal: list[BaseException] = []

        def stop(exc: BaseException) -> None:
            fatal.append(exc)
            server.should_exit = True

        app = create_app(build, on_fatal=stop)

        class Server(uvicorn.Server):
            """uvicorn's server, telling the app the moment a signal asks it to stop:
            uvicorn runs the app's shutdown only after draining requests, and a sweep pass
            should stop during the drain, not after it."""

            def handle_exit(self, sig: int, frame: FrameType | None) -> None:
                request_shutdown(app)
                super().handle_exit(sig, frame)

        log.info(
            "serving on http://%s:%d",
            args.host,
            args.port,
            extra={"home": None if settings.database_url else str(settings.home)},
        )
        # log_config=None: uvicorn's loggers propagate to ours, so everything has one format.
        config = uvicorn.Config(
            app,
            host=args.host,
            port=args.port,
            log_config=None,
            access_log=False,
            timeout_graceful_shutdown=DRAIN_SECONDS,
        )
        server = Server(config)
        try:
            server.run(sockets=[listener])
        finally:
            if tracer_provider is not None:
                tracer_provider.shutdown()  # sends the spans still queued
    if fatal:
        cli_output.error(f"stopped: {fatal[0]}")
        return 2
    if not server.started:
        return 1  # start-up failed; the log says why
    return 0


def preflight(settings: Settings, url: str) -> None:
    """Before serving: `DatabaseMisconfigured` (stop, and say why) if the database refuses
    this configuration or holds a newer schema; `DatabaseUnavailable` if it cannot be
    reached yet (start anyway and wait for it, docs/adr/0081)."""
    from memory.entrypoints.bootstrap import database_for

    database = database_for(settings, url)
    database.reach()
    database.check_schema()


def build_parser() -> argparse.ArgumentParser:
    from memory.entrypoints import (
        check_cli,
        db_cli,
        demo_cli,
        flags_cli,
        history_cli,
        keys_cli,
        policy_cli,
    )

    parser = argparse.ArgumentParser(
        prog="memory", description="Local, multilingual semantic memory on PostgreSQL + pgvector."
    )
    parser.add_argument("--version", action="version", version=f"memory {memory_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the HTTP API and the background workers")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8080)
    serve.set_defaults(func=_serve)
    db_cli.register(sub)
    policy_cli.register(sub)
    history_cli.register(sub)
    flags_cli.register(sub)
    demo_cli.register(sub)
    keys_cli.register(sub)
    check_cli.register(sub)
    _add_json_flag(parser)
    return parser


def _add_json_flag(parser: argparse.ArgumentParser) -> None:
    """Every command (each leaf of the tree) takes `--json`: its result as one JSON
    document on stdout (for `serve`: its log lines as JSON)."""
    subcommands = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subcommands:
        parser.add_argument(
            "--json", action="store_true", help="machine-readable output (one JSON document)"
        )
        return
    for action in subcommands:
        for child in dict(action.choices).values():
            _add_json_flag(child)


def memory_version() -> str:
    return build_info.version()


def configuration_errors(exc: ValidationError) -> list[str]:
    """Each problem named by the environment variable an operator sets, not the field."""
    from memory.infrastructure.settings import ENV_PREFIX

    problems = []
    for error in exc.errors():
        field = str(error["loc"][0]) if error["loc"] else ""
        variable = f"{ENV_PREFIX}{field.upper()}" if field else "configuration"
        message = str(error["msg"]).removeprefix("Value error, ")
        given = error.get("input")
        shown = f" (got {given!r})" if isinstance(given, str) else ""
        problems.append(f"{variable}: {message}{shown}")
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    cli_output.use_json(bool(getattr(args, "json", False)))
    arguments = command_arguments(parser, args)
    try:
        # Before settings are read or anything is opened: a refused argument changes nothing.
        check_arguments(args, arguments)
        return _run(args)
    except InvalidInput as exc:
        cli_output.error(refusal(exc, arguments))
        return 2


def _run(args: argparse.Namespace) -> int:
    from tqdm.contrib.logging import logging_redirect_tqdm

    from memory.entrypoints.database_url import HomeHasNoDatabase
    from memory.entrypoints.logging_setup import configure_logging
    from memory.infrastructure.postgres.availability import DatabaseMisconfigured
    from memory.infrastructure.settings import Settings

    try:
        settings = Settings()
    except ValidationError as exc:
        cli_output.error("invalid configuration:\n  " + "\n  ".join(configuration_errors(exc)))
        return 2
    log_format = "json" if args.command == "serve" and args.json else settings.log_format
    configure_logging(settings.log_level, log_format)
    if not settings.database_url and args.command != "serve":
        log.info("using MEMORY_HOME=%s", settings.home)
    args.settings = settings
    try:
        # Log lines written during a command go above its progress bar, never through it.
        with logging_redirect_tqdm():
            return int(args.func(args))
    except (KeyboardInterrupt, ShutdownRequested):
        return 0
    except (HomeHasNoDatabase, DatabaseMisconfigured, DatabaseUnavailable) as exc:
        cli_output.error(str(exc))
        return 2
    except CommandRefused as exc:
        cli_output.error(exc.message)
        return exc.exit_status


if __name__ == "__main__":
    sys.exit(main())
