"""Log format for every entrypoint: one line per event, key facts in the message."""

from __future__ import annotations

import logging
import sys

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def configure_logging(level: str) -> None:
    logging.basicConfig(level=level, format=LOG_FORMAT, stream=sys.stderr, force=True)
    # httpx logs every request at INFO; that is noise for an embedding client.
    logging.getLogger("httpx").setLevel(logging.WARNING)
