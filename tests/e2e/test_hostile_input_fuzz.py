"""A bounded fuzz test over every route the app registers (both contexts, with the hash
models, on a real database): hostile strings, numbers, nesting, types and timestamps in
bodies, query strings and path segments. No answer may be a 5xx.

Bounded twice: a fixed, seeded case list per route (deterministic), and a wall-clock budget
after which the seeded extras stop (the fixed hostile corpus always runs). The corpus runs on
both event loops, the extras on asyncio only."""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from starlette.applications import Starlette
from starlette.routing import Route
from tests.conftest import running_app

from memory.entrypoints.bootstrap import Services, build_services
from memory.entrypoints.http.app import create_app
from memory.infrastructure.settings import Settings

pytestmark = pytest.mark.anyio

SEED = 20261130
# Seeded random cases per route on top of the fixed corpus, and the time after which they stop.
RANDOM_CASES_PER_ROUTE = 40
RANDOM_BUDGET_SECONDS = 25.0

HUGE_INT = "9" * 5000  # over Python's 4,300-digit int-string conversion limit
HUGE = "__HUGE_INT__"  # placeholder in a body, replaced by HUGE_INT in the raw JSON text

EXTREME_TIMESTAMPS = [
    "9999-12-31T23:59:59-14:00",
    "0001-01-01T00:00:00+14:00",
    "9999-12-31T23:59:59.999999+00:00",
    "0001-01-01T00:00:00Z",
    "1970-01-01T00:00:00Z",
    "1969-12-31T23:59:59.999999Z",
    "2999-01-01T00:00:00Z",
]
HOSTILE_STRINGS: list[str] = [
    "",
    " ",
    "\x00",
    "a\x00b",
    "\ud800",
    "x\udfffy",
    "\x1b[31m\x07",
    "x" * 100_001,
    "💥" * 2000,
    "'; DROP TABLE dw_chat_events; --",
    "%s %(x)s {0}",
    "../../etc/passwd",
    "10000-01-01T00:00:00Z",
    "2026-13-45T25:61:61Z",
    "30",
    "true",
    "null",
]
HOSTILE_VALUES: list[Any] = [
    *HOSTILE_STRINGS,
    *EXTREME_TIMESTAMPS,
    HUGE,
    -(2**63) - 1,
    2**64,
    -1,
    0,
    1.5,
    1e308,
    -1e308,
    True,
    False,
    None,
    [],
    {},
    [[[[["deep"]]]]],
    {"\x00": 1},
    {"\ud800": "x"},
    ["\ud800"],
]
RAW_BODIES: list[bytes] = [
    b"",
    b"{",
    b"null",
    b"[]",
    b"1",
    b'"x"',
    b"\xff\xfe\x00",
    b'{"a": NaN}',
    b'{"a": Infinity}',
    b'{"a": -Infinity}',
    b"[" * 50_000 + b"]" * 50_000,
    b'{"a":' * 5_000 + b"1" + b"}" * 5_000,
    b'{"x": ' + HUGE_INT.encode() + b"}",
    b'{"x": "\\ud800"}',
    b'{"\\ud800": 1}',
    b'{"x": "\\u0000"}',
    b'{"x": 1' + b"0" * 400 + b"e99999}",
]
HOSTILE_PATH_SEGMENTS = [
    "%00",
    "a%00b",
    "%ED%A0%80",  # the UTF-8 bytes of a lone surrogate (invalid UTF-8)
    "%FF%FE",
    "x" * 5000,
    "%20",
    "..",
    "%2F",
    quote("💥" * 50),
    "9" * 5000,
    "00000000-0000-0000-0000-000000000000",
    "-1",
]
HOSTILE_QUERY_VALUES = [
    "%00",
    "a%00b",
    "%ED%A0%80",
    "%FF",
    "x" * 20_000,
    HUGE_INT,
    "-1",
    "1.5",
    "true",
    "",
    *[quote(t) for t in EXTREME_TIMESTAMPS],
]


@dataclass(frozen=True)
class Case:
    method: str
    url: str
    body: bytes | None = None

    def describe(self) -> str:
        body = "" if self.body is None else f" body={self.body[:120]!r}"
        return f"{self.method} {self.url[:160]}{body}"


def encode(body: Any) -> bytes:
    return json.dumps(body).replace(json.dumps(HUGE), HUGE_INT).encode()


def _valid_event(**changes: Any) -> dict[str, Any]:
    return {
        "provider": "slack",
        "channel_id": "C1",
        "sender": "ali",
        "text": "how do I reset my password",
        "occurred_at": "2026-01-01T00:00:00Z",
        **changes,
    }


# A valid body per route that takes one, mutated field by field; routes without an entry
# get an empty object and the generic corpus.
BASE_BODIES: dict[tuple[str, str], dict[str, Any]] = {
    ("POST", "/v1/orgs/{org_id}/chat-events"): {
        "events": [_valid_event(event_id="fuzz-1"), _valid_event(text="no id: derived")]
    },
    ("POST", "/v1/sweep"): {"org_id": "acme"},
    ("POST", "/v1/purge"): {"org_id": "acme"},
    ("PUT", "/v1/feature-flags/{flag}"): {"enabled": True},
    ("PUT", "/v1/orgs/{org_id}/feature-flags/{flag}"): {"enabled": True},
    ("PUT", "/v1/orgs/{org_id}/retention"): {"days": 30},
    ("POST", "/v1/api-keys"): {"name": "fuzz", "org_id": "acme", "scopes": ["history:read"]},
    ("POST", "/v1/policies"): {
        "policy_id": "fuzz-new",
        "content": "Staff reset passwords every 90 days.",
        "metadata": {"title": "t", "source": "s", "tags": ["a"], "level": 2},
    },
    ("PUT", "/v1/policies/{policy_id}"): {
        "content": "Staff reset passwords every 60 days.",
        "metadata": {"title": "t"},
    },
    ("POST", "/v1/policies/search"): {
        "query": "password",
        "similarity_threshold": 0.0,
        "limit": 5,
        "filter": {
            "source": "s",
            "tags": {"any": ["a"]},
            "metadata": {"level": 2},
            "timestamp": {"gte": "2020-01-01T00:00:00Z"},
        },
    },
}
BASE_QUERIES: dict[tuple[str, str], dict[str, str]] = {
    ("GET", "/v1/orgs/{org_id}/history/search"): {
        "q": "password",
        "limit": "5",
        "provider": "slack",
        "channel_id": "C1",
        "since": "2020-01-01T00:00:00Z",
        "until": "2026-01-02T00:00:00Z",
    },
    ("GET", "/v1/embeddings/{embedding_ref}"): {"origin": "search", "query": "password"},
    ("GET", "/v1/audit"): {
        "since": "2020-01-01T00:00:00Z",
        "until": "2030-01-01T00:00:00Z",
        "org_id": "acme",
        "limit": "5",
        "cursor": "7",
    },
}


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Paths to every value inside a body (objects and lists), the containers included."""
    if path:
        yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _leaves(item, (*path, index))


def _replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, *rest = path
    copy = json.loads(json.dumps(value))
    copy[head] = _replaced(copy[head], tuple(rest), new) if rest else new
    return copy


def _fill(template: str, params: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)(?::\w+)?\}", lambda m: params[m.group(1)], template)


def fixed_cases(route: Route, method: str, valid_params: dict[str, str]) -> list[Case]:
    template = route.path
    url = _fill(template, valid_params)
    cases: list[Case] = []
    # Path segments: each parameter in turn.
    for name in route.param_convertors:
        for segment in HOSTILE_PATH_SEGMENTS:
            cases.append(Case(method, _fill(template, {**valid_params, name: segment})))
    # Query strings: each known parameter (and an unknown one) in turn.
    base_query = BASE_QUERIES.get((method, template), {})
    for name in [*base_query, "unknown"]:
        for value in HOSTILE_QUERY_VALUES:
            query = "&".join(
                f"{k}={value if k == name else quote(base_query[k])}"
                for k in {**base_query, name: ""}
            )
            cases.append(Case(method, f"{url}?{query}"))
    if method in ("POST", "PUT"):
        for raw in RAW_BODIES:
            cases.append(Case(method, url, raw))
        base = BASE_BODIES.get((method, template), {})
        cases.append(Case(method, url, encode(base)))
        for path in [*_leaves(base), ("unknown",)]:
            for value in HOSTILE_VALUES:
                cases.append(Case(method, url, encode(_replaced(base, path, value))))
    return cases


def random_cases(
    rng: random.Random, route: Route, method: str, valid_params: dict[str, str]
) -> Iterator[Case]:
    template = route.path
    base = BASE_BODIES.get((method, template), {})
    paths = [*_leaves(base), ("unknown",)]
    base_query = BASE_QUERIES.get((method, template), {})
    for _ in range(RANDOM_CASES_PER_ROUTE):
        params = {
            name: rng.choice([value, rng.choice(HOSTILE_PATH_SEGMENTS)])
            for name, value in valid_params.items()
        }
        url = _fill(template, params)
        if base_query:
            url += "?" + "&".join(
                f"{k}={rng.choice([quote(v), rng.choice(HOSTILE_QUERY_VALUES)])}"
                for k, v in base_query.items()
            )
        body = None
        if method in ("POST", "PUT"):
            mutated: Any = base
            for path in rng.sample(paths, k=min(len(paths), rng.randint(1, 3))):
                try:
                    mutated = _replaced(mutated, path, rng.choice(HOSTILE_VALUES))
                except (KeyError, IndexError, TypeError):
                    continue  # an earlier mutation removed this path
            body = encode(mutated)
        yield Case(method, url, body)


@pytest.fixture
def full_app(database_url: str, make_settings: Callable[..., Settings]) -> Callable[[], Any]:
    """Both contexts as `memory serve` wires them, on the hash models, without workers."""

    @asynccontextmanager
    async def run() -> AsyncIterator[tuple[Starlette, httpx.AsyncClient]]:
        settings = make_settings(projection_wait_timeout=0, search_timeout=30.0)

        def build() -> Services:
            return build_services(settings, database_url)

        app = create_app(build, run_workers=False)
        async with running_app(app, raise_app_exceptions=False) as client:
            yield app, client

    return run


async def test_no_hostile_input_gets_a_5xx_on_any_route(full_app, anyio_backend: str) -> None:
    rng = random.Random(SEED)
    failures: list[str] = []
    sent = 0
    async with full_app() as (app, client):
        # Something to find: a policy (for its embedding ref and updates) and chat history.
        stored = await client.post(
            "/v1/policies",
            json={"policy_id": "fuzz", "content": "Reset passwords every 90 days."},
        )
        assert stored.status_code == 201, stored.text
        ingested = await client.post(
            "/v1/orgs/acme/chat-events", json={"events": [_valid_event(event_id="e1")]}
        )
        assert ingested.status_code == 201, ingested.text
        valid_params = {
            "org_id": "acme",
            "flag": "digital_worker_semantic_search",
            "policy_id": "fuzz",
            "embedding_ref": stored.json()["embedding_ref"],
            "key_id": "key_0000000000000000",
            "asset": "swagger-ui.css",
            "file": "app.js",
        }
        routes = [r for r in app.routes if isinstance(r, Route)]
        templates = {r.path for r in routes}
        # Both contexts' routes are registered and walked.
        assert {"/v1/policies", "/v1/orgs/{org_id}/chat-events", "/healthz"} <= templates

        async def send(case: Case) -> None:
            nonlocal sent
            sent += 1
            response = await client.request(
                case.method,
                case.url,
                content=case.body,
                headers={"content-type": "application/json"} if case.body is not None else {},
            )
            if response.status_code >= 500:
                failures.append(f"{response.status_code} {case.describe()}: {response.text[:200]}")

        for route in routes:
            for method in sorted(route.methods or ()):
                if method == "HEAD":
                    continue
                for case in fixed_cases(route, method, valid_params):
                    await send(case)
        # The seeded extras combine the corpus's values; what they find does not depend on
        # the event loop, so they run once, on asyncio (uvicorn's), while the corpus runs on
        # both (trio is the one that reports an async generator left half-read).
        deadline = time.monotonic() + RANDOM_BUDGET_SECONDS
        for route in routes if anyio_backend == "asyncio" else ():
            for method in sorted(route.methods or ()):
                if method == "HEAD":
                    continue
                for case in random_cases(rng, route, method, valid_params):
                    if time.monotonic() > deadline:
                        break
                    await send(case)
        # Whatever the corpus stored, a sweep, its status and a search still answer.
        await client.put("/v1/feature-flags/digital_worker_semantic_search", json={"enabled": True})
        await client.put(
            "/v1/orgs/acme/feature-flags/digital_worker_semantic_search", json={"enabled": True}
        )
        for case in (
            Case("POST", "/v1/sweep"),
            Case("GET", "/v1/orgs/acme/sweep"),
            Case("GET", "/v1/orgs/acme/history/search?q=password"),
            Case("POST", "/v1/purge"),
        ):
            await send(case)
        health = await client.get("/healthz")
        assert health.status_code == 200
    assert sent > 1000
    assert not failures, f"{len(failures)} of {sent} answers were 5xx:\n" + "\n".join(failures[:40])
