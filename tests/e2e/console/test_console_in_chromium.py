"""The console in a real browser (headless Chromium, Debian's packages) against a real
`memory serve` seeded by `memory demo`: each page loads, the key is entered once and kept in
the tab's sessionStorage only, the header says whose key it is (GET /v1/api-keys/self), both
playgrounds search, an admin flips an org's semantic flag and sets its retention (a bad
value shows the server's reason), an admin for every org sets a flag's global state once it
confirmed what the state does (a refusal shows why and changes nothing), a wrong key shows
the service's refusal and lets the operator enter another, and a restricted key finds the
controls it may not use disabled or replaced by the reason, without ever meeting a 403."""

from __future__ import annotations

import httpx
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.select import Select
from tests.conftest import AUTH_HEADERS, TEST_ADMIN_TOKEN
from tests.e2e.console.browser import (
    console_problems,
    enter_key,
    fill,
    shown,
    storage,
    text_of,
    wait_for,
)

SEMANTIC = "digital_worker_semantic_search"
ORG = "acme-logistics"
# A key in the service's format that no one was ever given.
UNKNOWN_KEY = "mem_" + "A" * 43


def _click(driver: webdriver.Chrome, css: str) -> None:
    wait_for(driver, lambda d: d.find_element(By.CSS_SELECTOR, css)).click()


def _assert_key_kept_in_the_session_only(driver: webdriver.Chrome, secret: str) -> None:
    kept = storage(driver)
    assert kept["local"] == {}, "nothing in localStorage"
    assert secret in kept["session"].values()
    assert secret not in driver.current_url
    assert secret not in driver.execute_script("return document.cookie")


def _assert_nothing_from_elsewhere(
    driver: webdriver.Chrome, base: str, *, expected: tuple[int, ...]
) -> None:
    """Everything came from the service, no script error or CSP violation, and every failed
    request had one of the `expected` statuses (a 403 the page let the key run into is a
    failure unless expected)."""
    loaded = driver.execute_script(
        "return performance.getEntriesByType('resource').map((e) => e.name)"
    )
    assert loaded, "the page loaded its scripts and styles"
    assert all(url.startswith(base + "/") for url in loaded), loaded
    assert console_problems(driver, expected=expected) == []


def _unavailable_pages(driver: webdriver.Chrome) -> set[str]:
    return {
        str(link.get_attribute("data-page"))
        for link in driver.find_elements(By.CSS_SELECTOR, "#nav a.unavailable")
    }


def test_a_wrong_key_is_refused_and_a_restricted_key_sees_why_instead_of_a_403(
    demo_server: str, browser: webdriver.Chrome
) -> None:
    base, driver = demo_server, browser
    # The overview reads /healthz, which needs no key: models, projector lag, last sweep.
    driver.get(f"{base}/console")
    text_of(driver, "models", "hash:1024")
    assert "hash:384" in shown(driver, "models").text
    assert "leader" in text_of(driver, "projectors", "hash:384")

    # The server's first background pass (it runs at start-up): Refresh until it shows.
    def last_sweep(d: webdriver.Chrome) -> str | None:
        shown_now = d.find_element(By.CSS_SELECTOR, '[data-testid="last-sweep"]').text
        if "Outcome" in shown_now:
            return shown_now
        d.find_element(By.XPATH, "//button[text()='Refresh']").click()
        return None

    assert "Outcome\nok" in wait_for(driver, last_sweep)
    text_of(driver, "service", "ok")
    assert "Enter an API key" in shown(driver, "orgs-summary").text

    driver.get(f"{base}/console#/orgs")
    wait_for(driver, lambda d: "Enter an API key" in d.find_element(By.ID, "key-message").text)

    enter_key(driver, UNKNOWN_KEY)
    message = wait_for(
        driver,
        lambda d: (
            d.find_element(By.ID, "key-message").text
            if "401" in d.find_element(By.ID, "key-message").text
            else None
        ),
    )
    assert "unknown or revoked API key" in message and "Enter a valid API key" in message
    assert "Key refused (401 unauthenticated)" in text_of(driver, "key-set", "refused")

    # A key for one org that may only read its history, and expires in a month.
    created = httpx.post(
        f"{base}/v1/api-keys",
        headers=AUTH_HEADERS,
        json={
            "name": "acme reader",
            "org_id": ORG,
            "scopes": ["history:read"],
            "expires_in_days": 30,
        },
    )
    assert created.status_code == 201, created.text
    reader, reader_id = created.json()["secret"], created.json()["key_id"]
    enter_key(driver, reader)
    # The header says who the key is; the pages it may not use are marked in the menu.
    text_of(driver, "key-name", "acme reader")
    assert shown(driver, "key-id").text == reader_id
    assert shown(driver, "key-scopes").text == "history:read"
    assert shown(driver, "key-orgs").text == f"for org {ORG}"
    assert shown(driver, "key-expiry").text in {"expires in 30 days", "expires in 29 days"}
    assert wait_for(driver, lambda d: _unavailable_pages(d) or None) == {"policies", "audit"}
    # The directory shows this key's org only.
    orgs = text_of(driver, "orgs", ORG)
    assert "kedai-runcit" not in orgs
    # The global flag states are shown; setting one needs an admin key for every org.
    text_of(driver, f"global-state-{SEMANTIC}", "opt-in")
    global_reason = text_of(driver, "global-flags-not-allowed", "admin")
    assert "needs the admin scope on a key for every org" in global_reason
    for control in ("pick", "change"):
        element = driver.find_element(
            By.CSS_SELECTOR, f'[data-testid="global-{control}-{SEMANTIC}"]'
        )
        assert not element.is_enabled(), control

    fill(driver, "org-id", ORG)  # an org opened by its id
    _click(driver, "#org-open")
    text_of(driver, "org-title", ORG)
    text_of(driver, "semantic-search", "on")
    # Flags are shown, their buttons disabled with the reason; retention has no form.
    flags_reason = text_of(driver, "flags-not-allowed", "admin")
    assert f"needs the admin scope for {ORG}" in flags_reason
    assert f"has history:read for org {ORG}" in flags_reason
    for action in ("on", "off", "clear"):
        button = driver.find_element(By.CSS_SELECTOR, f'[data-testid="flag-{action}-{SEMANTIC}"]')
        assert not button.is_enabled(), action
    retention_reason = text_of(driver, "retention-not-allowed", "retention")
    assert f"needs the admin scope for {ORG}" in retention_reason
    assert driver.find_elements(By.ID, "retention-days") == []
    text_of(driver, "retention-days-shown", "days")  # still readable
    flags = httpx.get(f"{base}/v1/orgs/{ORG}/feature-flags", headers=AUTH_HEADERS).json()
    assert flags["semantic_search"] is True

    # History: the key's org is filled in and searches; another org is explained, not sent.
    _click(driver, '[data-testid="org-history-link"]')
    fill(driver, "history-query", "customer")
    assert driver.find_element(By.ID, "history-org").get_attribute("value") == ORG
    _click(driver, "#history-search")
    text_of(driver, "history-explain", "results")
    fill(driver, "history-org", "kedai-runcit")
    _click(driver, "#history-search")
    assert "history:read for kedai-runcit" in text_of(driver, "history-not-allowed", "needs")

    # Pages it may not use say why instead of asking the service.
    driver.get(f"{base}/console#/policies")
    assert "the policies:read scope" in text_of(driver, "policies-not-allowed", "needs")
    assert driver.find_elements(By.ID, "policy-query") == []
    driver.get(f"{base}/console#/audit")
    assert "a key for every org" in text_of(driver, "audit-not-allowed", "needs")

    _assert_key_kept_in_the_session_only(driver, reader)
    # The unknown key's 401s only: the restricted key never met a 403.
    _assert_nothing_from_elsewhere(driver, base, expected=(401,))


def test_an_admin_searches_both_contexts_and_changes_an_org(
    demo_server: str, browser: webdriver.Chrome
) -> None:
    base, driver = demo_server, browser
    driver.get(f"{base}/console")
    enter_key(driver, TEST_ADMIN_TOKEN)
    # The admin token is configuration: every scope, every org, no expiry; nothing is off.
    text_of(driver, "key-name", "MEMORY_ADMIN_TOKEN")
    assert shown(driver, "key-id").text == "admin-token"
    assert shown(driver, "key-scopes").text.split() == [
        "history:read",
        "history:write",
        "policies:read",
        "policies:write",
        "admin",
        "metrics:read",
    ]
    assert shown(driver, "key-orgs").text == "for every org"
    assert shown(driver, "key-expiry").text == "never expires"
    assert _unavailable_pages(driver) == set()
    summary = text_of(driver, "orgs-summary", "Semantic search on")
    assert "Orgs\n2" in summary

    # History playground: a full-text hit and semantic hits with similarity and window.
    driver.get(f"{base}/console#/history")
    fill(driver, "history-org", ORG)
    fill(driver, "history-query", "customer")
    _click(driver, "#history-search")
    assert "semantic on" in text_of(driver, "history-explain", "results")
    hits = shown(driver, "history-hits")
    rows = [
        (
            row.find_element(By.CSS_SELECTOR, "td.matched").text,
            row.find_element(By.CSS_SELECTOR, "td.similarity").text,
            row.find_element(By.CSS_SELECTOR, "td.window").text,
            row.text,
        )
        for row in hits.find_elements(By.CSS_SELECTOR, "tbody tr")
    ]
    assert any(m == "full-text" and "customer" in text for m, _, _, text in rows), rows
    # A time range before any of the demo's messages finds nothing.
    until = driver.find_element(By.ID, "history-until")
    driver.execute_script("arguments[0].value = '2001-01-01T00:00:00'", until)
    _click(driver, "#history-search")
    text_of(driver, "history-hits", "No messages matched")
    driver.execute_script("arguments[0].value = ''", until)
    _click(driver, "#history-search")
    text_of(driver, "history-hits", "customer")
    semantic = [(s, w) for m, s, w, _ in rows if m == "semantic"]
    assert semantic, rows
    assert all(float(s) >= 0 and len(w) == 8 for s, w in semantic), semantic

    # Policy playground: threshold, page size, a hit with its similarity, the next page.
    driver.get(f"{base}/console#/policies")
    fill(driver, "policy-query", "password")
    fill(driver, "policy-threshold", "0")
    fill(driver, "policy-limit", "2")
    _click(driver, "#policy-search")
    assert "Page 1: 2 results" in text_of(driver, "policy-explain", "Page 1")
    first_page = shown(driver, "policy-hits").text
    assert "pw-rotation" in first_page and "Password rotation" in first_page
    assert "global" in first_page  # each hit names its namespace (docs/adr/0102)
    _click(driver, "#policy-next")
    text_of(driver, "policy-explain", "Page 2")
    assert "pw-rotation" not in shown(driver, "policy-hits").text
    _click(driver, "#policy-previous")
    text_of(driver, "policy-explain", "Page 1")
    # A filter: only the Chinese policy carries the tag `zh`.
    fill(driver, "policy-tags", "zh")
    _click(driver, "#policy-search")
    text_of(driver, "policy-explain", "Page 1: 1 results")
    assert "customer-refunds" in shown(driver, "policy-hits").text
    fill(driver, "policy-tags", "")
    fill(driver, "policy-threshold", "2")
    _click(driver, "#policy-search")
    assert "similarity_threshold" in text_of(driver, "error", "422")
    # The namespace goes with the search: a malformed one is the server's 422 naming it.
    fill(driver, "policy-threshold", "0")
    fill(driver, "policy-namespace", "acme")
    _click(driver, "#policy-search")
    assert "namespace" in text_of(driver, "error", "422")
    fill(driver, "policy-namespace", "")

    # Orgs: the directory, then one org; turn its semantic search off.
    driver.get(f"{base}/console#/orgs")
    text_of(driver, "orgs", "kedai-runcit")
    _click(driver, f'a[href="#/orgs/{ORG}"]')
    text_of(driver, "semantic-search", "on")
    text_of(driver, "partitions", "slack/ops")
    assert driver.find_elements(By.CSS_SELECTOR, ".not-allowed") == []
    # `memory demo` left the global state opt-in (ADR 0131): the org is on because it opted in.
    text_of(driver, f"global-{SEMANTIC}", "opt-in")
    _click(driver, f'[data-testid="flag-clear-{SEMANTIC}"]')
    text_of(driver, "semantic-search", "off")
    text_of(driver, "flags", "not opted in")
    _click(driver, f'[data-testid="flag-on-{SEMANTIC}"]')
    text_of(driver, "semantic-search", "on")
    _click(driver, f'[data-testid="flag-off-{SEMANTIC}"]')
    text_of(driver, "semantic-search", "off")
    flags = httpx.get(f"{base}/v1/orgs/{ORG}/feature-flags", headers=AUTH_HEADERS).json()
    assert flags["semantic_search"] is False

    # A bad retention shows the server's reason and changes nothing; a good one is saved.
    before = httpx.get(f"{base}/v1/orgs/{ORG}/retention", headers=AUTH_HEADERS).json()
    fill(driver, "retention-days", "0")
    _click(driver, "#retention-save")
    reason = text_of(driver, "retention-message", "422")
    assert "days" in reason and "validation_error" in reason
    assert httpx.get(f"{base}/v1/orgs/{ORG}/retention", headers=AUTH_HEADERS).json() == before
    fill(driver, "retention-days", "45")
    _click(driver, "#retention-save")
    text_of(driver, "retention-days-shown", "45 days")
    assert httpx.get(f"{base}/v1/orgs/{ORG}/retention", headers=AUTH_HEADERS).json()["days"] == 45

    # The history page (opened from the org's page) now says why semantic search is off.
    _click(driver, '[data-testid="org-history-link"]')
    assert driver.find_element(By.ID, "history-org").get_attribute("value") == ORG
    fill(driver, "history-query", "customer")
    _click(driver, "#history-search")
    explained = text_of(driver, "history-explain", "semantic off")
    assert f"the flag {SEMANTIC} is turned off for this org" in explained
    assert "semantic" not in [
        cell.text
        for cell in shown(driver, "history-hits").find_elements(By.CSS_SELECTOR, "td.matched")
    ]

    # The audit log shows both changes, newest first.
    driver.get(f"{base}/console#/audit")
    entries = text_of(driver, "audit-entries", "retention.set")
    assert entries.index("retention.set") < entries.index("feature_flag.org.set")

    _assert_key_kept_in_the_session_only(driver, TEST_ADMIN_TOKEN)
    # The refused retention and threshold only.
    _assert_nothing_from_elsewhere(driver, base, expected=(422,))


def _global_state(base: str) -> str:
    answer = httpx.get(f"{base}/v1/feature-flags/{SEMANTIC}", headers=AUTH_HEADERS)
    return str(answer.json()["state"])


def _global_changes(base: str) -> list[tuple[str, object]]:
    """The audit log's global flag changes, oldest first: (who, the value recorded)."""
    page = httpx.get(f"{base}/v1/audit", headers=AUTH_HEADERS, params={"limit": 100}).json()
    return [
        (e["actor"]["name"], e["after"])
        for e in reversed(page["entries"])
        if e["action"] == "feature_flag.global.set"
    ]


def _pick(driver: webdriver.Chrome, state: str) -> None:
    picker = wait_for(
        driver, lambda d: d.find_element(By.CSS_SELECTOR, f'[data-testid="global-pick-{SEMANTIC}"]')
    )
    Select(picker).select_by_value(state)
    _click(driver, f'[data-testid="global-change-{SEMANTIC}"]')


def test_an_admin_for_every_org_sets_the_global_state_once_confirmed_and_a_refusal_changes_nothing(
    demo_server: str, browser: webdriver.Chrome
) -> None:
    base, driver = demo_server, browser
    created = httpx.post(
        f"{base}/v1/api-keys",
        headers=AUTH_HEADERS,
        json={"name": "ops admin", "org_id": None, "scopes": ["admin", "history:read"]},
    )
    assert created.status_code == 201, created.text
    ops, ops_id = created.json()["secret"], created.json()["key_id"]
    before = _global_changes(base)
    driver.get(f"{base}/console#/orgs")
    enter_key(driver, ops)
    text_of(driver, "key-name", "ops admin")
    # `memory demo` left the state opt-in and opted its two orgs in (ADR 0131).
    text_of(driver, f"global-state-{SEMANTIC}", "opt-in")
    assert text_of(driver, "orgs", "kedai-runcit").count("set for this org") == 2
    assert driver.find_elements(By.CSS_SELECTOR, '[data-testid="global-flags-not-allowed"]') == []

    # The state shown already: nothing to confirm.
    _pick(driver, "opt_in")
    text_of(driver, "global-flag-message", "already")
    assert driver.find_elements(By.CSS_SELECTOR, '[data-testid="global-confirm"]') == []
    # Cancel sends nothing.
    _pick(driver, "on")
    asked = text_of(driver, "global-confirm", "every org")
    assert f"Set {SEMANTIC} to on?" in asked
    assert "on for every org that has not turned it off, including orgs created later" in asked
    _click(driver, '[data-testid="global-confirm-no"]')
    wait_for(
        driver, lambda d: not d.find_elements(By.CSS_SELECTOR, '[data-testid="global-confirm"]')
    )
    assert _global_state(base) == "opt_in"

    # Confirmed: off for every org, the orgs' own `true` included; the directory says so.
    _pick(driver, "off")
    asked = text_of(driver, "global-confirm", "every org")
    assert "off for every org, including the orgs that turned it on" in asked
    _click(driver, '[data-testid="global-confirm-yes"]')
    text_of(driver, f"global-state-{SEMANTIC}", "off")
    assert text_of(driver, "orgs", "global setting").count("global setting") == 2
    assert _global_state(base) == "off"

    # The key is revoked meanwhile: the confirmed change is refused, shown, and changes nothing.
    _pick(driver, "opt_in")
    assert "on only for the orgs that turned it on" in text_of(driver, "global-confirm", "only")
    revoked = httpx.delete(f"{base}/v1/api-keys/{ops_id}", headers=AUTH_HEADERS)
    assert revoked.status_code == 204, revoked.text
    _click(driver, '[data-testid="global-confirm-yes"]')
    refused = text_of(driver, "global-flag-message", "401")
    assert "unauthenticated" in refused and "unknown or revoked API key" in refused
    assert _global_state(base) == "off"

    # Another admin key for every org sets it back to opt-in.
    enter_key(driver, TEST_ADMIN_TOKEN)
    text_of(driver, "key-name", "MEMORY_ADMIN_TOKEN")
    text_of(driver, f"global-state-{SEMANTIC}", "off")
    _pick(driver, "opt_in")
    _click(driver, '[data-testid="global-confirm-yes"]')
    text_of(driver, f"global-state-{SEMANTIC}", "opt-in")
    assert text_of(driver, "orgs", "set for this org").count("set for this org") == 2
    assert _global_state(base) == "opt_in"

    # Only the two confirmed changes were made, each by the key that confirmed it.
    assert _global_changes(base)[len(before) :] == [
        ("ops admin", False),
        ("MEMORY_ADMIN_TOKEN", "opt_in"),
    ]
    _assert_key_kept_in_the_session_only(driver, TEST_ADMIN_TOKEN)
    _assert_nothing_from_elsewhere(driver, base, expected=(401,))


def test_an_org_with_many_partitions_is_shown_a_page_at_a_time(
    demo_server: str, browser: webdriver.Chrome
) -> None:
    base, driver = demo_server, browser
    org = "many-channels"
    events = [
        {
            "provider": "webchat",
            "channel_id": f"S{i:03d}",
            "sender": "visitor",
            "text": f"a question from visitor number {i}",
            "occurred_at": "2026-11-01T10:00:00+00:00",
        }
        for i in range(120)
    ]
    ingested = httpx.post(
        f"{base}/v1/orgs/{org}/chat-events", json={"events": events}, headers=AUTH_HEADERS
    )
    assert ingested.status_code == 201, ingested.text
    driver.get(f"{base}/console#/orgs/{org}")
    enter_key(driver, TEST_ADMIN_TOKEN)
    text_of(driver, "sweep-partitions", "120")
    text_of(driver, "partitions-page", "page 1 of 3: 50 shown")
    first = text_of(driver, "partitions", "webchat/S000")
    assert "webchat/S049" in first and "webchat/S050" not in first
    _click(driver, "#partitions-next")
    text_of(driver, "partitions-page", "page 2 of 3")
    second = text_of(driver, "partitions", "webchat/S050")
    assert "webchat/S000" not in second and "webchat/S099" in second
    _click(driver, "#partitions-next")
    text_of(driver, "partitions-page", "page 3 of 3: 20 shown")
    assert shown(driver, "partitions").find_elements(By.CSS_SELECTOR, "tbody tr")
    assert not wait_for(driver, lambda d: d.find_element(By.ID, "partitions-next")).is_enabled()
    _click(driver, "#partitions-previous")
    text_of(driver, "partitions", "webchat/S050")
    _click(driver, "#partitions-previous")
    text_of(driver, "partitions", "webchat/S000")
    assert not wait_for(driver, lambda d: d.find_element(By.ID, "partitions-previous")).is_enabled()
    _assert_nothing_from_elsewhere(driver, base, expected=())
