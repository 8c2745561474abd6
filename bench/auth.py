"""Authentication overhead over HTTP: the same route, the same server build, with and
without `AccessControl`, measured in one run; and what a failed authentication costs.

    .venv/bin/python bench/auth.py [--requests 3000] [--rounds 10]

Starts a private PostgreSQL cluster and four uvicorn servers in this process (uvloop,
httptools, as `memory serve` runs):
- **no auth**: the app with the access middleware removed (the baseline);
- **auth, cached key**: a stored API key, looked up once a second (`KEY_CACHE_SECONDS`),
  every other request answered from the cache after SHA-256 of the secret;
- **auth, lookup every request**: the same with the cache time set to 0, i.e. one indexed
  query per request (what the 1 s cache saves);
- **unknown key, new each request**: a well-formed secret no key has, a new one every
  request (failed-authentication limit off): one lookup each, answered 401;
- **unknown key, repeated**: one such secret over and over: answered 401 from the cache of
  unknown secrets (`UNKNOWN_SECRET_SECONDS`, docs/adr/0099);
- **malformed key**: 401 without a lookup;
- **unknown key, address over the limit**: new unknown secrets from an address past
  `MEMORY_FAILED_AUTH_PER_MINUTE` (a fourth server with the limit at 1): 429 before any
  lookup.

The route is `GET /v1/feature-flags` (one small query). Configurations are interleaved in
rounds so that machine noise hits them alike. Ratios are against the baseline of this run.
"""

from __future__ import annotations

import argparse
import secrets
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import httpx
import uvicorn

from bench_cluster import cluster
from memory.application.access import authentication
from memory.application.access.key_administration import operator_key
from memory.domain.access.api_key import SECRET_BYTES, new_secret
from memory.entrypoints.bootstrap import Services, build_services
from memory.entrypoints.http.access import AccessControl
from memory.entrypoints.http.app import create_app
from memory.infrastructure.postgres.embedded import free_port
from memory.infrastructure.settings import Settings

ROUTE = "/v1/feature-flags"
SERVER_START_SECONDS = 60
WARMUP_REQUESTS = 200


@contextmanager
def server(
    url: str, *, with_auth: bool, built: list[Services], failed_auth_per_minute: int = 0
) -> Iterator[str]:
    settings = Settings(
        database_url=url,
        policy_model="hash:384",
        history_model="hash:1024",
        log_level="WARNING",
        pool_min_size=2,
        pool_max_size=4,
        failed_auth_per_minute=failed_auth_per_minute,
    )

    def build() -> Services:
        services = build_services(settings, url)
        built.append(services)
        return services

    app = create_app(build, run_workers=False)
    if not with_auth:
        app.user_middleware = [m for m in app.user_middleware if m.cls is not AccessControl]
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, access_log=False)
    uv = uvicorn.Server(config)
    thread = threading.Thread(target=uv.run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + SERVER_START_SECONDS
    while not uv.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("server did not start")
        time.sleep(0.05)
    try:
        yield base
    finally:
        uv.should_exit = True
        thread.join(30)


def timed(
    client: httpx.Client,
    n: int,
    *,
    secret: Callable[[], str] | None = None,
    expect: tuple[int, ...] = (200,),
) -> list[float]:
    """`n` requests, each with the key `secret()` gives (None: the client's own), each
    answered with a status in `expect`."""
    out = []
    for _ in range(n):
        headers = None if secret is None else {"Authorization": f"Bearer {secret()}"}
        started = time.perf_counter()
        response = client.get(ROUTE, headers=headers)
        out.append(time.perf_counter() - started)
        if response.status_code not in expect:
            raise RuntimeError(f"{response.status_code}: {response.text}")
    return out


def unknown_secret() -> str:
    return new_secret(secrets.token_bytes(SECRET_BYTES))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=3000, help="per configuration")
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    per_round = max(1, args.requests // args.rounds)
    built: list[Services] = []
    with (
        cluster("auth") as url,
        server(url, with_auth=False, built=built) as plain,
        server(url, with_auth=True, built=built) as authed,
        server(url, with_auth=True, built=built, failed_auth_per_minute=1) as limited,
    ):
        secret = built[1].access.create(operator_key("bench"), "bench", None, ["history:read"])
        headers = {"Authorization": f"Bearer {secret.secret}"}
        repeated = unknown_secret()
        samples: dict[str, list[float]] = {
            "no auth": [],
            "auth, cached key": [],
            "auth, lookup every request": [],
            "unknown key, new each request": [],
            "unknown key, repeated": [],
            "malformed key": [],
            "unknown key, address over the limit": [],
        }
        with (
            httpx.Client(base_url=plain, timeout=10) as a,
            httpx.Client(base_url=authed, timeout=10, headers=headers) as b,
            httpx.Client(base_url=limited, timeout=10) as c,
        ):
            timed(a, WARMUP_REQUESTS)
            timed(b, WARMUP_REQUESTS)
            timed(c, 1, secret=unknown_secret, expect=(401,))  # spends the address's one failure
            cache_seconds = authentication.KEY_CACHE_SECONDS
            for _ in range(args.rounds):
                samples["no auth"] += timed(a, per_round)
                samples["auth, cached key"] += timed(b, per_round)
                authentication.KEY_CACHE_SECONDS = 0.0
                try:
                    samples["auth, lookup every request"] += timed(b, per_round)
                finally:
                    authentication.KEY_CACHE_SECONDS = cache_seconds
                samples["unknown key, new each request"] += timed(
                    b, per_round, secret=unknown_secret, expect=(401,)
                )
                samples["unknown key, repeated"] += timed(
                    b, per_round, secret=lambda: repeated, expect=(401,)
                )
                samples["malformed key"] += timed(
                    b, per_round, secret=lambda: "mem_not-a-key", expect=(401,)
                )
                # At 1 a minute, the address earns a lookup (401) a minute; the rest is 429.
                samples["unknown key, address over the limit"] += timed(
                    c, per_round, secret=unknown_secret, expect=(429, 401)
                )
    base = statistics.median(samples["no auth"])
    print(f"GET {ROUTE} over loopback HTTP, {per_round * args.rounds} requests each, one client")
    print()
    print("| configuration | p50 ms | p95 ms | mean ms | p50 vs no auth |")
    print("|---|---|---|---|---|")
    for label, values in samples.items():
        p50 = statistics.median(values)
        p95 = statistics.quantiles(values, n=20)[18]
        print(
            f"| {label} | {p50 * 1000:.3f} | {p95 * 1000:.3f} | "
            f"{statistics.fmean(values) * 1000:.3f} | {p50 / base:.3f}x |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
