"""`memory serve`'s listening socket, taken before anything else happens.

A port that is already taken (another `memory serve`, any other program) must stop the
command at once, before it starts an embedded cluster, migrates, loads a model or logs
"serving on": otherwise a second server would change the database of the first and only
then fail (docs/adr/0132). The socket is bound and listening here and handed to uvicorn,
so nobody can take the port between this check and the server's start.
"""

from __future__ import annotations

import socket

# As uvicorn's own default: connections that arrive while the service starts wait here.
BACKLOG = 2048


class PortUnavailable(Exception):
    """The address cannot be listened on: the port is taken, reserved or not ours to use."""

    def __init__(self, host: str, port: int, reason: OSError) -> None:
        super().__init__(
            f"cannot listen on {host}:{port}: {reason.strerror or reason}; is another "
            "`memory serve` running there? Nothing was started or changed; choose another "
            "port with --port"
        )


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to (host, port) and listening, or `PortUnavailable`."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        sock = socket.create_server((host, port), family=family, backlog=BACKLOG)
    except OSError as exc:
        raise PortUnavailable(host, port, exc) from exc
    # uvicorn's workers (and its reloader) inherit the listening socket as it does its own.
    sock.set_inheritable(True)
    return sock
