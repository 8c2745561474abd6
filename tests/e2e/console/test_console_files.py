"""The console's static files as the service serves them (docs/adr/0072): without a key,
with the strict Content-Security-Policy, revalidated by ETag, nothing outside the package's
console folder, no reference to another origin, and every file shipped in the wheel."""

from __future__ import annotations

import fnmatch
import re
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.conftest import running_app

from memory.entrypoints.bootstrap import build_services
from memory.entrypoints.http.app import create_app
from memory.entrypoints.http.console_routes import console_dir, console_files
from memory.infrastructure.settings import Settings

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[3]
# An SVG names its XML namespace with a URL; nothing fetches it.
NAMESPACES = {"http://www.w3.org/2000/svg"}


async def _get_all(
    database_url: str,
    make_settings: Callable[..., Settings],
    paths: list[tuple[str, dict[str, str]]],
) -> list[tuple[int, dict[str, str], bytes]]:
    settings = make_settings(projection_wait_timeout=0)
    app = create_app(lambda: build_services(settings, database_url), run_workers=False)
    answers = []
    async with running_app(app, authenticated=False) as client:
        for path, headers in paths:
            response = await client.get(path, headers=headers)
            answers.append((response.status_code, dict(response.headers), response.content))
    return answers


async def test_every_console_file_is_served_without_a_key_under_the_csp(
    database_url: str, make_settings: Callable[..., Settings]
) -> None:
    names = sorted(console_files())
    assert {"index.html", "app.js", "api.js", "console.css"} <= set(names)
    answers = await _get_all(
        database_url, make_settings, [("/console", {})] + [(f"/console/{n}", {}) for n in names]
    )
    for (status, headers, body), name in zip(answers, ["index.html", *names], strict=True):
        assert status == 200, name
        csp = headers["content-security-policy"]
        assert "default-src 'none'" in csp and "script-src 'self'" in csp, name
        assert "connect-src 'self'" in csp and "frame-ancestors 'none'" in csp, name
        assert "unsafe-inline" not in csp and "unsafe-eval" not in csp, name
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["cache-control"] == "no-cache"
        assert headers["etag"].startswith('"')
        assert body == (console_dir() / name).read_bytes()
    kinds = {
        name: headers["content-type"]
        for (_, headers, _), name in zip(answers[1:], names, strict=True)
    }
    assert kinds["index.html"].startswith("text/html")
    assert kinds["app.js"].startswith("text/javascript")  # module scripts need a JS type
    assert kinds["console.css"].startswith("text/css")


async def test_an_unchanged_file_is_revalidated_with_a_304(
    database_url: str, make_settings: Callable[..., Settings]
) -> None:
    etag = console_files()["app.js"].etag
    ((status, headers, body), (other_status, _, _)) = await _get_all(
        database_url,
        make_settings,
        [
            ("/console/app.js", {"If-None-Match": etag}),
            ("/console/app.js", {"If-None-Match": '"x"'}),
        ],
    )
    assert status == 304 and body == b"" and headers["etag"] == etag
    assert "content-security-policy" in headers
    assert other_status == 200


async def test_only_the_console_folder_is_served(
    database_url: str, make_settings: Callable[..., Settings]
) -> None:
    paths = [
        "/console/console_routes.py",  # a file beside it in the package
        "/console/..%2Fhttp%2Fapp.py",
        "/console/%2E%2E%2F__init__.py",
        "/console/nothing.js",
    ]
    answers = await _get_all(database_url, make_settings, [(p, {}) for p in paths])
    for (status, _, body), path in zip(answers, paths, strict=True):
        # 404 from the console's route, or 401 for a path no route matches (a decoded `/`
        # leaves the console's one-segment pattern): never the file.
        assert status in (401, 404), path
        assert b"import" not in body, path
    assert "content-security-policy" in answers[0][1]


def test_no_console_file_references_another_origin() -> None:
    references = []
    for path in sorted(console_dir().iterdir()):
        text = path.read_text(encoding="utf-8")
        assert set(re.findall(r"https?://[^\s\"'<>)]+", text)) <= NAMESPACES, path.name
        assert not re.search(r"(?:src|href|from|import|url)\s*[=(]?\s*[\"']?//", text), path.name
        references += re.findall(r"(?:src|href)=\"([^\"]+)\"", text)
        references += re.findall(r"from \"([^\"]+)\"", text)
    assert references  # the scan saw the page's scripts, styles and imports
    for reference in references:
        assert reference.startswith(("/console/", "./", "#", "/docs")), reference


def test_the_package_data_ships_every_console_file() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = pyproject["tool"]["setuptools"]["package-data"]["memory.entrypoints"]
    for path in console_dir().iterdir():
        relative = f"console/{path.name}"
        assert any(fnmatch.fnmatch(relative, p) for p in patterns), relative
