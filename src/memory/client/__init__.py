"""`memory.client`: a typed Python client of the service's HTTP API.

    from memory.client import MemoryClient

    with MemoryClient("http://127.0.0.1:8080", api_key="mem_...") as memory:
        memory.store_policy("pw-reset", "Staff must reset their password every 90 days.",
                            {"tags": ["security"]})
        for hit in memory.iter_search_policies("how often do passwords change?"):
            print(hit.policy_id, hit.similarity)

Arguments are checked by the server's own request models (`memory.contract`) before anything
is sent, answers are parsed into its response models (`memory.contract.responses`), and
errors are the typed classes of `memory.client.errors`, each carrying the service's error
`code`. Importing the client loads no web framework and no database driver.
`AsyncMemoryClient` has the same methods, awaited.
"""

from memory.client.async_client import AsyncMemoryClient
from memory.client.errors import (
    Conflict,
    Forbidden,
    InvalidRequest,
    KeyExpired,
    MemoryApiError,
    NotFound,
    RateLimited,
    TimedOut,
    TransportFailed,
    Unauthorized,
    Unavailable,
)
from memory.client.retry import RetryPolicy
from memory.client.sync_client import MemoryClient
from memory.contract.history_requests import ChatEventBody as ChatEvent

__all__ = [
    "AsyncMemoryClient",
    "ChatEvent",
    "Conflict",
    "Forbidden",
    "InvalidRequest",
    "KeyExpired",
    "MemoryApiError",
    "MemoryClient",
    "NotFound",
    "RateLimited",
    "RetryPolicy",
    "TimedOut",
    "TransportFailed",
    "Unauthorized",
    "Unavailable",
]
