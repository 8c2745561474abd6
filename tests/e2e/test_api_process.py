"""`memory.api` as a sibling bounded context uses it: imported in a process of its own,
both contexts used in process, without HTTP (and without importing Starlette or uvicorn)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.fakes import TEST_ACTOR

SIBLING = r"""
import json, sys
from datetime import UTC, datetime, timedelta

import memory.api as api

web = sorted(m for m in sys.modules if m.split(".")[0] in ("starlette", "uvicorn"))
out = {"web_modules_after_import": web}
settings = api.Settings(
    database_url=sys.argv[1], home=sys.argv[2], policy_model="hash:384",
    history_model="hash:1024", projection_wait_timeout=20,
)
# A sibling context names itself in the audit log.
SIBLING = api.Actor("sibling", "test sibling context")
with api.open(settings, workers=True) as mem:
    receipt = mem.policies.store(
        "pw-reset", "Staff must reset their password every 90 days.", {"title": "Passwords"},
        actor=SIBLING,
    )
    out["searchable"] = receipt.searchable
    answer = mem.policies.search("Staff must reset their password every 90 days.")
    out["policy_hits"] = [r.policy_id for r in answer.results]
    try:
        mem.policies.store("pw-reset", "again", actor=SIBLING)
    except api.AlreadyExists as exc:
        out["conflict"] = exc.code
    # An org's own policy, changed and deleted: each version names the sibling.
    mem.policies.store("late-fees", "Late fees apply.", actor=SIBLING, namespace="org:acme")
    mem.policies.update("late-fees", "Late fees apply after 30 days.", actor=SIBLING,
                        namespace="org:acme")
    mem.policies.delete("late-fees", actor=SIBLING, namespace="org:acme")
    out["actors"] = [
        [v.change.value, v.actor.key_id, v.actor.name]
        for v in mem.policies.versions("late-fees", namespace="org:acme")
    ]
    try:
        mem.policies.store("x", "y", actor=SIBLING, reach=api.Reach("acme"), namespace="global")
    except api.NamespaceForbidden as exc:
        out["forbidden"] = exc.details

    mem.history.set_global_flag(api.SEMANTIC_SEARCH_FLAG, True, actor=SIBLING)
    start = datetime.now(UTC) - timedelta(hours=3)
    events = [
        api.ChatEvent(
            event_id=f"m{i}", provider="slack", channel_id="C1", sender="ali",
            text=f"could you help me reset my password, attempt {i}",
            occurred_at=start + timedelta(minutes=i),
        )
        for i in range(3)
    ]
    out["inserted"] = mem.history.ingest("acme", events).inserted
    out["embedded"] = mem.history.sweep("acme").windows_embedded
    result = mem.history.search("acme", api.HistoryQuery("reset my password"))
    out["semantic"] = result.semantic.value
    out["history_hits"] = sorted({h.event_id for h in result.hits})
    try:
        mem.history.set_retention("acme", 0, actor=SIBLING)
    except api.InvalidInput as exc:
        out["invalid_field"] = exc.field
    out["web_modules_at_end"] = sorted(
        m for m in sys.modules if m.split(".")[0] in ("starlette", "uvicorn")
    )
print(json.dumps(out))
"""


def test_a_sibling_process_uses_both_contexts_in_process(database_url: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    done = subprocess.run(
        [sys.executable, "-c", SIBLING, database_url, str(tmp_path / "home")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["web_modules_after_import"] == [] and out["web_modules_at_end"] == []
    # workers=True ran the projector here: the write became searchable before it returned.
    assert out["searchable"] is True
    assert out["policy_hits"] == ["pw-reset"]
    assert out["conflict"] == "conflict"
    assert out["actors"] == [
        ["stored", "sibling", "test sibling context"],
        ["content", "sibling", "test sibling context"],
        ["deleted", "sibling", "test sibling context"],
    ]
    assert out["forbidden"] == {"field": "namespace"}
    assert out["inserted"] == 3 and out["embedded"] == 1
    assert out["semantic"] == "on"
    assert out["history_hits"] == ["m0", "m1", "m2"]
    assert out["invalid_field"] == "days"


def test_without_workers_nothing_runs_in_the_background(
    database_url: str, make_settings: Any
) -> None:
    import memory.api

    settings = make_settings(database_url=database_url, projection_wait_timeout=0.3)
    with memory.api.open(settings) as mem:
        # No projector here (nor anywhere): the write is recorded, not yet searchable.
        assert (
            mem.policies.store("p1", "Travel must be approved.", actor=TEST_ACTOR).searchable
            is False
        )
        assert mem.policies.models()[0].position is None
        with pytest.raises(memory.api.NotFound):
            mem.policies.versions("p2")
        assert [v.version for v in mem.policies.versions("p1")] == [1]
