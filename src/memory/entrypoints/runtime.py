"""What each bounded context hands the composition root: its routes, its background
workers, its CLI commands and its health."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    # Only for annotations: building a context never imports Starlette (memory.api).
    from starlette.routing import BaseRoute


Worker = Callable[[], Awaitable[None]]


class ContextRuntime(Protocol):
    name: str

    def routes(self) -> list[BaseRoute]: ...

    def workers(self) -> list[Worker]:
        """Long-running coroutines `memory serve` runs until shutdown (projector, sweep)."""
        ...

    def health(self) -> dict[str, Any]: ...

    def request_stop(self) -> None:
        """Shutdown has begun (SIGTERM): background work that runs in long steps should stop
        at its next step, while requests drain. Called on the event loop; must not block."""
        ...

    def close(self) -> None: ...
