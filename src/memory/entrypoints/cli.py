"""`memory` command line: `serve`, plus each context's operator commands."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from collections.abc import Sequence
from types import FrameType

from pydantic import ValidationError

from memory.entrypoints.logging_setup import configure_logging
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
    import uvicorn

    from memory.entrypoints.bootstrap import build_services
    from memory.entrypoints.database_url import database_url
    from memory.entrypoints.http.app import create_app, request_shutdown

    settings: Settings = args.settings
    signal.signal(signal.SIGTERM, _raise_shutdown)
    with database_url(settings) as url:
        app = create_app(lambda: build_services(settings, url))

        class Server(uvicorn.Server):
            """uvicorn's server, telling the app the moment a signal asks it to stop:
            uvicorn runs the app's shutdown only after draining requests, and a sweep pass
            should stop during the drain, not after it."""

            def handle_exit(self, sig: int, frame: FrameType | None) -> None:
                request_shutdown(app)
                super().handle_exit(sig, frame)

        log.info("serving on http://%s:%d", args.host, args.port)
        # log_config=None: uvicorn's loggers propagate to ours, so everything has one format.
        config = uvicorn.Config(
            app,
            host=args.host,
            port=args.port,
            log_config=None,
            access_log=False,
            timeout_graceful_shutdown=DRAIN_SECONDS,
        )
        Server(config).run()
    return 0


def build_parser() -> argparse.ArgumentParser:
    from memory.entrypoints import db_cli, history_cli, policy_cli

    parser = argparse.ArgumentParser(
        prog="memory", description="Local, multilingual semantic memory on PostgreSQL + pgvector."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the HTTP API and the background workers")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8080)
    serve.set_defaults(func=_serve)
    db_cli.register(sub)
    policy_cli.register(sub)
    history_cli.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        settings = Settings()
    except ValidationError as exc:
        print(f"memory: invalid configuration:\n{exc}", file=sys.stderr)
        return 2
    configure_logging(settings.log_level, settings.log_format)
    args.settings = settings
    try:
        return int(args.func(args))
    except (KeyboardInterrupt, ShutdownRequested):
        return 0


if __name__ == "__main__":
    sys.exit(main())
