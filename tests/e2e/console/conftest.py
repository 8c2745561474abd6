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


@pytest.fixture(scope="package")
def chromium_for_the_package() -> Iterator[webdriver.Chrome]:
    """One headless Chromium for the console's tests, not one per test (starting one costs
    ~1.6 s of CPU; docs/adr/0162). Each test has a server of its own and a tab of its own
    (`browser`)."""
    try:
        binaries()
    except BrowserMissing as missing:
        # Never a skip: CI must run this (scripts/setup.sh installs both packages).
        pytest.fail(str(missing))
    with chromium() as driver:
        yield driver


@pytest.fixture
def browser(chromium_for_the_package: webdriver.Chrome) -> Iterator[webdriver.Chrome]:
    """The package's Chromium in a new tab (a tab's sessionStorage is its own, even for an
    origin an earlier test used: a port can be given out again), no cookies, its console
    log read to the end; the test's origin's storage is cleared after it."""
    driver = chromium_for_the_package
    earlier = driver.window_handles
    driver.switch_to.new_window("tab")
    for handle in earlier:
        driver.switch_to.window(handle)
        driver.close()
    driver.switch_to.window(driver.window_handles[0])
    driver.delete_all_cookies()
    driver.get_log("browser")
    yield driver
    if driver.current_url.startswith("http"):
        driver.execute_script("localStorage.clear(); sessionStorage.clear();")
