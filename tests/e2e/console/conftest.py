"""Fixtures of the console's browser tests: a `memory serve` seeded by `memory demo`, and
headless Chromium."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from tests.e2e.console.browser import BrowserMissing, binaries, chromium
from tests.e2e.processes import HASH_MODELS, memory_cli, served_on


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def demo_server(database_url: str, tmp_path: Path) -> Iterator[str]:
    home = tmp_path / "home"
    seeded = memory_cli(home, "demo", "--json", MEMORY_DATABASE_URL=database_url, **HASH_MODELS)
    assert seeded.returncode == 0, seeded.stderr
    with served_on(database_url, home) as base:
        yield base


@pytest.fixture
def browser() -> Iterator[webdriver.Chrome]:
    try:
        binaries()
    except BrowserMissing as missing:
        # Never a skip: CI must run this (scripts/setup.sh installs both packages).
        pytest.fail(str(missing))
    with chromium() as driver:
        yield driver
