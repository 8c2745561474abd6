"""The web console (docs/console.md, docs/adr/0072): static files shipped inside the package
(`memory/entrypoints/console/`), served at `/console` and `/console/{file}`.

The console holds no data: every page reads the `/v1` API in the browser with the API key
the operator enters there, so its routes are public, like /docs. Its responses carry a
strict Content-Security-Policy (scripts and styles only from this origin, requests only to
this origin, no inline script, no framing): a console page renders chat text and policy
titles, and if one of them ever slipped past the DOM-only rendering, the policy still stops
it from running or from sending the key anywhere.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.resources
from pathlib import Path

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from memory.entrypoints.http.access import Access, AccessTable

CONSOLE_PACKAGE = "memory.entrypoints"
CONSOLE_DIR = "console"
INDEX = "index.html"

CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "connect-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    )
)
# The file names carry no content hash (there is no build step), so the browser asks again
# each time and gets a 304 while the file is unchanged: an upgrade shows at the next load.
CACHE_CONTROL = "no-cache"

MEDIA_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}

ACCESS: AccessTable = {
    ("GET", "/console"): Access.public(),
    ("GET", "/console/{file}"): Access.public(),
}


@functools.cache
def console_dir() -> Path:
    return Path(str(importlib.resources.files(CONSOLE_PACKAGE) / CONSOLE_DIR))


@functools.cache
def console_files() -> dict[str, ConsoleFile]:
    """Every file the console serves, by name, read once: only the package's own files
    (the names are fixed at start-up, so a path can never reach outside the folder)."""
    files = {}
    for path in sorted(console_dir().iterdir()):
        media_type = MEDIA_TYPES.get(path.suffix)
        if path.is_file() and media_type is not None:
            files[path.name] = ConsoleFile(path.read_bytes(), media_type)
    return files


class ConsoleFile:
    """One static file with its validator (`ETag`, a digest of its bytes)."""

    __slots__ = ("body", "etag", "media_type")

    def __init__(self, body: bytes, media_type: str) -> None:
        self.body = body
        self.media_type = media_type
        self.etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


def security_headers() -> dict[str, str]:
    return {
        "Content-Security-Policy": CONTENT_SECURITY_POLICY,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": CACHE_CONTROL,
    }


def console_routes() -> list[BaseRoute]:
    async def index(request: Request) -> Response:
        return _answer(request, console_files()[INDEX])

    async def file(request: Request) -> Response:
        name = request.path_params["file"]
        found = console_files().get(name)
        if found is None:
            return JSONResponse(
                {"error": {"code": "not_found", "message": f"no console file {name!r}"}},
                404,
                headers=security_headers(),
            )
        return _answer(request, found)

    return [
        Route("/console", index, methods=["GET"]),
        Route("/console/{file}", file, methods=["GET"]),
    ]


def _answer(request: Request, found: ConsoleFile) -> Response:
    headers = {**security_headers(), "ETag": found.etag}
    if found.etag in _etags(request.headers.get("if-none-match", "")):
        return Response(status_code=304, headers=headers)
    return Response(found.body, media_type=found.media_type, headers=headers)


def _etags(header: str) -> set[str]:
    return {tag.strip().removeprefix("W/") for tag in header.split(",") if tag.strip()}
