"""`AdminAction`: one administrative change, as an event in the event store.

Each change is an aggregate of its own with a single `Recorded` event (no two changes ever
contend for one stream; the notification log orders them all). The event says who (the key
id and name), what (the action, the org, the target), and the values before and after. It
never carries chat text or policy content: only flags, days, counts, key ids and names,
model ids (docs/security.md, "What the audit log holds").
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from eventsourcing.domain import Aggregate, event


class Action(StrEnum):
    GLOBAL_FLAG_SET = "feature_flag.global.set"
    ORG_FLAG_SET = "feature_flag.org.set"
    RETENTION_SET = "retention.set"
    PURGE_RUN = "purge.run"
    SWEEP_TRIGGERED = "sweep.triggered"
    KEY_CREATED = "api_key.created"
    KEY_REVOKED = "api_key.revoked"
    MODEL_DROPPED = "model.dropped"
    REEMBED_STARTED = "reembed.started"
    HISTORY_ERASED = "history.erased"
    ORG_ERASED = "org.erased"
    POLICY_STORED = "policy.stored"
    POLICY_UPDATED = "policy.updated"
    POLICY_DELETED = "policy.deleted"
    # `memory check` ran against a model: its figures and whether it passed (ADR 0114).
    MODEL_CHECKED = "model.checked"


@dataclass(frozen=True, slots=True)
class Actor:
    """Who made a change: the API key (id and name), or the operator at the command line
    (`key_id` "cli")."""

    key_id: str
    name: str


@dataclass(frozen=True, slots=True)
class AuditedChange:
    """What a change reports about itself, for its audit event."""

    target: str
    before: Any
    after: Any
    org_id: str | None = None


def sender_reference(key: bytes, org_id: str, sender: str) -> str:
    """How an erasure by sender names the person in the audit log: HMAC-SHA256 under the
    server's erasure key of the org, a NUL and the sender, in hex. Whoever holds the key
    (the database's operator) can confirm a given person's erasure; whoever reads the log
    without it cannot confirm a guessed name (docs/adr/0100). Entries written before it
    carry `sender_sha256`, the unkeyed SHA-256 of the same text."""
    return hmac.new(key, f"{org_id}\x00{sender}".encode(), hashlib.sha256).hexdigest()


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class AdminAction(Aggregate):
    """Values travel as canonical JSON text (as policy metadata does, docs/adr/0021), so a
    flag's `true` and a count's `3` come back exactly as they were."""

    class Recorded(Aggregate.Created):
        actor_key_id: str
        actor_name: str
        action: str
        org_id: str | None
        target: str
        before: str
        after: str

    @classmethod
    def record(cls, actor: Actor, action: Action, change: AuditedChange) -> AdminAction:
        return cls(
            actor_key_id=actor.key_id,
            actor_name=actor.name,
            action=action.value,
            org_id=change.org_id,
            target=change.target,
            before=_canonical(change.before),
            after=_canonical(change.after),
        )

    @event(Recorded)
    def __init__(
        self,
        actor_key_id: str,
        actor_name: str,
        action: str,
        org_id: str | None,
        target: str,
        before: str,
        after: str,
    ) -> None:
        self.actor_key_id = actor_key_id
        self.actor_name = actor_name
        self.action = action
        self.org_id = org_id
        self.target = target
        self.before = before
        self.after = after
