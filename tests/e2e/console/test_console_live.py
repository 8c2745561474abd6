"""The live console in headless Chromium (docs/adr/0122): the overview and an org's page
refresh by themselves and show the last hour's trends with data (searches, degraded share,
sweep lag age, windows embedded); **Pause** stops the refreshes, and the pause survives a
reload; pages that are not live (the playgrounds) neither refresh nor show the control."""

from __future__ import annotations

import time
from typing import Any

import httpx
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.select import Select
from tests.conftest import AUTH_HEADERS, TEST_ADMIN_TOKEN
from tests.e2e.console.browser import (
    console_problems,
    enter_key,
    shown,
    storage,
    text_of,
    wait_for,
)

ORG = "acme-logistics"
# The shortest period the control offers; a paused page is watched for longer than two.
PERIOD_SECONDS = 5
WATCH_PAUSED_SECONDS = 2 * PERIOD_SECONDS + 2


def _search(base: str, times: int, org: str = ORG) -> None:
    for _ in range(times):
        found = httpx.get(
            f"{base}/v1/orgs/{org}/history/search",
            params={"q": "customer payment"},
            headers=AUTH_HEADERS,
            timeout=30,
        )
        assert found.status_code == 200, found.text


def _activity(base: str, path: str) -> dict[str, Any]:
    answer = httpx.get(f"{base}{path}", headers=AUTH_HEADERS, timeout=30)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def _values(driver: webdriver.Chrome, chart: str) -> list[float | None]:
    raw = shown(driver, chart).get_attribute("data-values") or ""
    return [None if v == "" else float(v) for v in raw.split(",")]


def _searches_shown(driver: webdriver.Chrome, chart: str = "trend-searches") -> float:
    return sum(v or 0 for v in _values(driver, chart))


def _refreshes(driver: webdriver.Chrome) -> int:
    return int(shown(driver, "live-state").get_attribute("data-refreshes") or 0)


def test_the_overview_refreshes_its_trends_until_paused(
    demo_server: str, browser: webdriver.Chrome
) -> None:
    base, driver = demo_server, browser
    swept = httpx.post(f"{base}/v1/sweep", json={}, headers=AUTH_HEADERS, timeout=60)
    assert swept.status_code == 200, swept.text
    _search(base, 3)
    driver.get(f"{base}/console")
    enter_key(driver, TEST_ADMIN_TOKEN)

    # Trends with data: the searches made above, the minute's lag age after the pass.
    text_of(driver, "service-trends", "History searches")
    wait_for(driver, lambda d: _searches_shown(d) >= 3)
    assert len(_values(driver, "trend-searches")) == 60
    assert _values(driver, "trend-lag")[-1] is not None
    assert shown(driver, "trend-searches").find_elements(By.CSS_SELECTOR, "svg rect.bar")
    assert "Live" in shown(driver, "live-state").text

    # Live: at the shortest period the page reads again by itself and shows new searches.
    Select(driver.find_element(By.ID, "live-period")).select_by_value(str(PERIOD_SECONDS))
    before = _searches_shown(driver)
    _search(base, 2)
    wait_for(driver, lambda d: _searches_shown(d) >= before + 2)
    assert _refreshes(driver) >= 1

    # Paused: nothing is read again, however long one waits, nor after a reload.
    driver.find_element(By.ID, "live-toggle").click()
    text_of(driver, "live-state", "Paused")
    paused_at, shown_then = _refreshes(driver), _searches_shown(driver)
    _search(base, 4)
    time.sleep(WATCH_PAUSED_SECONDS)
    assert (_refreshes(driver), _searches_shown(driver)) == (paused_at, shown_then)
    assert driver.find_element(By.ID, "live-toggle").text == "Resume"
    driver.refresh()
    text_of(driver, "live-state", "Paused")
    reloaded = _searches_shown(driver)  # the reload itself reads once
    assert reloaded >= shown_then + 4
    _search(base, 1)
    time.sleep(WATCH_PAUSED_SECONDS)
    assert (_refreshes(driver), _searches_shown(driver)) == (0, reloaded)
    assert storage(driver)["session"]["memory.console.paused"] == "yes"

    # Resumed: the next period reads again.
    driver.find_element(By.ID, "live-toggle").click()
    wait_for(driver, lambda d: _searches_shown(d) >= reloaded + 1)
    assert console_problems(driver, expected=()) == []


def test_an_orgs_page_is_live_with_its_own_trend_and_the_playgrounds_are_not(
    demo_server: str, browser: webdriver.Chrome
) -> None:
    base, driver = demo_server, browser
    _search(base, 2)
    _search(base, 5, org="kedai-runcit")
    # The demo's own search (another process, stored when it closed) counts too.
    org_searches = _activity(base, f"/v1/orgs/{ORG}/activity")["searches"]
    assert org_searches >= 2 and _activity(base, "/v1/activity")["searches"] >= org_searches + 5
    driver.get(f"{base}/console#/orgs/{ORG}")
    enter_key(driver, TEST_ADMIN_TOKEN)
    text_of(driver, "org-trends", "History searches")
    wait_for(driver, lambda d: _searches_shown(d) == org_searches)  # not the other org's
    assert "Windows embedded" in shown(driver, "org-trends").text
    Select(driver.find_element(By.ID, "live-period")).select_by_value(str(PERIOD_SECONDS))
    _search(base, 1)
    wait_for(driver, lambda d: _searches_shown(d) == org_searches + 1)

    driver.get(f"{base}/console#/history")
    wait_for(driver, lambda d: d.find_element(By.ID, "history-query"))
    assert not driver.find_element(By.ID, "live-control").is_displayed()
    assert console_problems(driver, expected=()) == []
