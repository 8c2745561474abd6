"""The alert rules and dashboard in deploy/ (docs/adr/0109): Prometheus accepts the rules,
each alert fires on the series it is about and stays quiet otherwise (promtool's own rule
tests, deploy/prometheus/alerts.test.yml), and every metric the rules and the dashboard
name is one a running `memory serve` exports."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import httpx
from tests.conftest import TEST_ADMIN_TOKEN
from tests.e2e.processes import served_on

ROOT = Path(__file__).resolve().parents[3]
RULES = ROOT / "deploy" / "prometheus" / "alerts.yml"
RULE_TESTS = ROOT / "deploy" / "prometheus" / "alerts.test.yml"
DASHBOARD = ROOT / "deploy" / "grafana" / "memory.json"
# Debian's `prometheus` package (scripts/setup.sh installs it with the dev extras).
PROMTOOL = "promtool"
METRIC = re.compile(r"\bmemory_[a-z0-9_]*[a-z0-9]")
# A family's samples are named after it with these suffixes (the exposition format).
SAMPLE_SUFFIXES = {
    "histogram": ("_bucket", "_count", "_sum"),
    "summary": ("_count", "_sum"),
    "counter": ("_total",),
}


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    tool = shutil.which(PROMTOOL)
    assert tool is not None, "promtool is missing: run scripts/setup.sh with MEMORY_EXTRAS=dev"
    return subprocess.run(
        [tool, *args], cwd=RULES.parent, capture_output=True, text=True, timeout=60, check=False
    )


def test_prometheus_accepts_the_rules() -> None:
    checked = _promtool("check", "rules", RULES.name)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS" in checked.stdout


def test_each_alert_fires_on_its_series_and_not_on_a_healthy_service() -> None:
    tested = _promtool("test", "rules", RULE_TESTS.name)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    alerts = set(re.findall(r"^\s+- alert: (\w+)$", RULES.read_text(), re.MULTILINE))
    covered = set(re.findall(r"alertname: (\w+)", RULE_TESTS.read_text()))
    assert alerts and alerts <= covered, f"alerts without a rule test: {alerts - covered}"


def used_metrics() -> dict[str, set[str]]:
    """Each metric name the rules and the dashboard's queries use, with where."""
    used: dict[str, set[str]] = {}
    for rule_expr in re.findall(r"expr: \|?\n?(.*?)\n\s+for:", RULES.read_text(), re.DOTALL):
        for name in METRIC.findall(rule_expr):
            used.setdefault(name, set()).add(RULES.name)
    for panel in json.loads(DASHBOARD.read_text())["panels"]:
        for target in panel["targets"]:
            for name in METRIC.findall(target["expr"]):
                used.setdefault(name, set()).add(f"{DASHBOARD.name}: {panel['title']}")
    return used


def exported_names(exposition: str) -> set[str]:
    names: set[str] = set()
    for family, kind in re.findall(r"^# TYPE (\S+) (\S+)$", exposition, re.MULTILINE):
        names.add(family)
        base = family.removesuffix("_total")
        names.update(base + suffix for suffix in SAMPLE_SUFFIXES.get(kind, ()))
    return names


def test_every_metric_the_rules_and_dashboard_use_is_exported_by_memory_serve(
    database_url: str, tmp_path: Path
) -> None:
    used = used_metrics()
    assert {"memory_http_requests_total", "memory_build_info"} <= set(used)
    with served_on(database_url, tmp_path) as base:
        answer = httpx.get(
            f"{base}/metrics", headers={"Authorization": f"Bearer {TEST_ADMIN_TOKEN}"}
        )
    assert answer.status_code == 200, answer.text
    exported = exported_names(answer.text)
    missing = {name: sorted(where) for name, where in used.items() if name not in exported}
    assert missing == {}, f"used but not exported by memory serve: {missing}"
