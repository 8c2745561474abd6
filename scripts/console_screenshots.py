"""Regenerates the console's screenshots (docs/console/*.png) from a demo-seeded server.

    MEMORY_EXTRAS=dev bash scripts/setup.sh        # Chromium, chromedriver, selenium
    .venv/bin/python scripts/console_screenshots.py [--out docs/console] [--hash-models]

Creates a private home (an embedded PostgreSQL cluster) in a temporary folder, loads
`memory demo` into it, starts `memory serve` with a fresh admin key, and drives the same
headless Chromium as the console's e2e tests (tests/e2e/console/browser.py) through every
page, saving one PNG each, and an org's page once more with a read-only key for that org.
With the bundled multilingual model by default, so the searches show real similarities;
`--hash-models` is the fast stand-in the tests use.
"""

from __future__ import annotations

import argparse
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from selenium.webdriver.common.by import By  # noqa: E402
from tests.e2e.console.browser import chromium, enter_key, fill, shown, text_of  # noqa: E402

from memory.entrypoints.serve_process import ServeFailed, serve_environment, served  # noqa: E402

HASH_MODELS = {"MEMORY_POLICY_MODEL": "hash:384", "MEMORY_HISTORY_MODEL": "hash:1024"}
# The bundled e5 model takes up to ~3 minutes to load on a busy 2-core machine.
STARTUP_SECONDS = 180
MODEL_WARM_UP_SECONDS = 120
WIDTH = 1400
MAX_HEIGHT = 2400
BUSY_SEARCHES = [
    ("acme-logistics", "customer payment has not arrived"),
    ("acme-logistics", "driver is late"),
    ("kedai-runcit", "stok habis"),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "console")
    parser.add_argument("--hash-models", action="store_true")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="memory-console-shots-") as tmp:
        settings = {
            "MEMORY_HOME": str(Path(tmp) / "home"),
            "MEMORY_ADMIN_TOKEN": "mem_" + secrets.token_urlsafe(32),
        }
        if args.hash_models:
            settings |= HASH_MODELS
        demo = subprocess.run(
            [sys.executable, "-m", "memory.entrypoints.cli", "demo"],
            env=serve_environment(settings),
            capture_output=True,
            text=True,
            check=False,
        )
        if demo.returncode != 0:
            print(demo.stderr, file=sys.stderr)
            return 1
        try:
            with served(
                settings, deadline_seconds=STARTUP_SECONDS, log_path=Path(tmp) / "serve.log"
            ) as server:
                shoot(server.base_url, settings["MEMORY_ADMIN_TOKEN"], args.out)
        except ServeFailed as exc:
            print(exc, file=sys.stderr)
            return 1
    return 0


def shoot(base: str, key: str, out: Path) -> None:
    busy_hour(base, key)
    with chromium(window=(WIDTH, 900)) as driver:
        driver.get(f"{base}/console")
        enter_key(driver, key)
        text_of(driver, "orgs-summary", "Semantic search on")
        text_of(driver, "service-trends", "in the hour")
        save(driver, out / "overview.png")

        driver.get(f"{base}/console#/orgs")
        text_of(driver, "orgs", "kedai-runcit")
        text_of(driver, "global-state-digital_worker_semantic_search", "opt-in")
        save(driver, out / "orgs.png")

        driver.get(f"{base}/console#/orgs/acme-logistics")
        text_of(driver, "partitions", "slack/ops")
        shown(driver, "org-summary")
        text_of(driver, "org-trends", "in the hour")
        save(driver, out / "org.png")
        # Paused: the control says so, and the page stays as it is.
        driver.find_element(By.ID, "live-toggle").click()
        text_of(driver, "live-state", "Paused")
        save(driver, out / "paused.png", height=420)

        driver.get(f"{base}/console#/history")
        fill(driver, "history-org", "acme-logistics")
        fill(driver, "history-query", "customer payment has not arrived")
        # The first query may find the model still loading (the answer says `degraded`):
        # ask again until it is warm.
        deadline = time.monotonic() + MODEL_WARM_UP_SECONDS
        while True:
            driver.find_element(By.ID, "history-search").click()
            explained = text_of(driver, "history-explain", "results")
            if "semantic on" in explained or time.monotonic() > deadline:
                break
            time.sleep(2)
        save(driver, out / "history.png")

        driver.get(f"{base}/console#/policies")
        fill(driver, "policy-query", "berapa kerap saya perlu tukar kata laluan?")
        fill(driver, "policy-limit", "5")
        driver.find_element(By.ID, "policy-search").click()
        text_of(driver, "policy-explain", "Page 1")
        save(driver, out / "policies.png")

        driver.get(f"{base}/console#/audit")
        text_of(driver, "audit-entries", "feature_flag")
        save(driver, out / "audit.png")

        # A key for one org that may only read: the controls it may not use say why.
        created = httpx.post(
            f"{base}/v1/api-keys",
            headers={"Authorization": f"Bearer {key}"},
            json={
                "name": "acme reader",
                "org_id": "acme-logistics",
                "scopes": ["history:read"],
                "expires_in_days": 30,
            },
            timeout=30,
        )
        created.raise_for_status()
        driver.get(f"{base}/console#/orgs/acme-logistics")
        enter_key(driver, created.json()["secret"])
        text_of(driver, "key-name", "acme reader")
        text_of(driver, "partitions", "slack/ops")
        shown(driver, "retention-not-allowed")
        save(driver, out / "restricted.png")


def busy_hour(base: str, key: str) -> None:
    """Some traffic for the trends (docs/adr/0122): a sweep pass, and searches of two orgs a
    few seconds apart (the trend is per minute, so they land in the last one or two)."""
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=120) as c:
        c.post("/v1/sweep", json={}).raise_for_status()
        for i, (org, query) in enumerate(BUSY_SEARCHES * 4):
            c.get(f"/v1/orgs/{org}/history/search", params={"q": query}).raise_for_status()
            if i % 3 == 2:
                time.sleep(1)


def save(driver: Any, path: Path, height: int | None = None) -> None:
    """The whole page (or its top `height` pixels): the viewport is stretched first."""
    if height is None:
        height = driver.execute_script("return document.documentElement.scrollHeight")
    metrics = {"width": WIDTH, "height": min(int(height), MAX_HEIGHT), "deviceScaleFactor": 1}
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {**metrics, "mobile": False})
    time.sleep(0.3)
    driver.save_screenshot(str(path))
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")


if __name__ == "__main__":
    raise SystemExit(main())
