"""Headless Chromium for the console's tests and its screenshots (scripts/
console_screenshots.py): Debian's `chromium` and `chromium-driver`, which scripts/setup.sh
installs with the dev extras. Selenium is pointed at both binaries, so it never tries to
download a browser or a driver of its own."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.wait import WebDriverWait

WINDOW = (1400, 1000)
# How long a page may take to show an answer: generous, the machine is shared (2 cores).
WAIT_SECONDS = 30

MISSING = (
    "{what} not found: the console's browser tests need Debian's chromium and chromium-driver"
    " packages; `make test` installs them (MEMORY_EXTRAS=dev bash scripts/setup.sh)"
)

T = TypeVar("T")


class BrowserMissing(RuntimeError):
    pass


def binaries() -> tuple[str, str]:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if browser is None:
        raise BrowserMissing(MISSING.format(what="chromium"))
    if driver is None:
        raise BrowserMissing(MISSING.format(what="chromedriver"))
    return browser, driver


@contextmanager
def chromium(window: tuple[int, int] = WINDOW) -> Iterator[webdriver.Chrome]:
    browser, driver_path = binaries()
    options = Options()
    options.binary_location = browser
    for argument in (
        "--headless=new",
        "--no-sandbox",  # the tests run as root in CI
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--lang=en-US",
        f"--window-size={window[0]},{window[1]}",
    ):
        options.add_argument(argument)
    # The page's console (CSP violations and script errors land there).
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(executable_path=driver_path))
    try:
        yield driver
    finally:
        driver.quit()


def wait_for(driver: webdriver.Chrome, condition: Callable[[webdriver.Chrome], T]) -> T:
    """`condition`'s first truthy value; a stale element (the page re-rendered) is a retry."""
    try:
        return WebDriverWait(
            driver, WAIT_SECONDS, ignored_exceptions=[StaleElementReferenceException]
        ).until(condition)
    except TimeoutException:
        raise AssertionError(
            f"timed out on {driver.current_url}; page text:\n"
            + driver.find_element(By.TAG_NAME, "body").text
        ) from None


def shown(driver: webdriver.Chrome, name: str) -> WebElement:
    return wait_for(driver, lambda d: _visible(d, f'[data-testid="{name}"]'))


def text_of(driver: webdriver.Chrome, name: str, contains: str) -> str:
    """The text of the element `data-testid=name` once it contains `contains`."""

    def found(d: webdriver.Chrome) -> str | None:
        element = _visible(d, f'[data-testid="{name}"]')
        return element.text if element is not None and contains in element.text else None

    return wait_for(driver, found)


def fill(driver: webdriver.Chrome, element_id: str, text: str) -> None:
    """Replace the text of the form field `element_id`, once it is on the page."""
    field = wait_for(driver, lambda d: d.find_element(By.ID, element_id))
    field.clear()
    field.send_keys(text)


def _visible(driver: webdriver.Chrome, css: str) -> WebElement | None:
    for element in driver.find_elements(By.CSS_SELECTOR, css):
        if element.is_displayed():
            return element
    return None


def enter_key(driver: webdriver.Chrome, secret: str) -> None:
    """Types `secret` into the console's key form (opening it if needed) and submits."""
    panel = driver.find_element(By.ID, "key-panel")
    if not panel.is_displayed():
        driver.find_element(By.CSS_SELECTOR, "#key-status button").click()
    field = wait_for(driver, lambda d: _visible(d, "#key-input"))
    field.clear()
    field.send_keys(secret)
    driver.find_element(By.ID, "key-submit").click()


def storage(driver: webdriver.Chrome) -> dict[str, Any]:
    """Everything the page keeps in localStorage and sessionStorage."""
    script = (
        "const dump = (s) => Object.fromEntries(Object.keys(s).map((k) => [k, s.getItem(k)]));"
        "return JSON.stringify({local: dump(localStorage), session: dump(sessionStorage)});"
    )
    result: dict[str, Any] = json.loads(driver.execute_script(script))
    return result


def console_problems(
    driver: webdriver.Chrome, *, expected: tuple[int, ...] = (401, 403, 422)
) -> list[str]:
    """The page console's errors since the last call (script errors, CSP violations, failed
    requests), except requests answered with one of the `expected` statuses, which the
    tests cause on purpose."""
    problems = []
    for entry in driver.get_log("browser"):
        message = str(entry.get("message", ""))
        if entry.get("level") != "SEVERE":
            continue
        failed = _FAILED_REQUEST.search(message)
        if failed is not None and int(failed.group(1)) in expected:
            continue
        problems.append(message)
    return problems


_FAILED_REQUEST = re.compile(
    r"Failed to load resource: the server responded with a status of (\d+)"
)
