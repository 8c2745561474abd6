"""The first admin key of a fresh installation (`memory serve` without MEMORY_ADMIN_TOKEN).

Its secret goes to `$MEMORY_HOME/admin-token`, readable by the owner only; the log says
where, never what.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from memory.entrypoints.bootstrap import Services

log = logging.getLogger(__name__)

ADMIN_TOKEN_FILE = "admin-token"
ADMIN_TOKEN_MODE = 0o600


def ensure_admin_key(services: Services) -> Path | None:
    """Create the admin key when no key exists and none is configured; returns the file
    its secret was written to (None: nothing created)."""
    if services.settings.admin_token is not None:
        return None
    created = services.access.bootstrap()
    if created is None:
        return None
    path = services.settings.home / ADMIN_TOKEN_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    # Created with its final mode, so the secret is never readable by others, not even
    # for a moment; an old file from an earlier installation is replaced.
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, ADMIN_TOKEN_MODE)
    with os.fdopen(fd, "w", encoding="ascii") as out:
        out.write(created.secret + "\n")
    log.info(
        "created admin API key %s; its secret is in %s (use: Authorization: Bearer <secret>)",
        created.key.key_id,
        path.resolve(),
    )
    return path
