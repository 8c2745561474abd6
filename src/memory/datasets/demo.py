"""The demo data set (`memory demo`): policies, and chat in English, Malay, Chinese and
rojak across two orgs, with example searches. Chat instants are relative to now, so the
data is always inside retention and its conversation windows are closed."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from importlib import resources

# Messages of one conversation are this far apart: well inside a session.
MESSAGE_SPACING = timedelta(minutes=2)


@dataclass(frozen=True, slots=True)
class DemoPolicy:
    policy_id: str
    lang: str
    title: str
    content: str


@dataclass(frozen=True, slots=True)
class DemoMessage:
    org_id: str
    provider: str
    channel_id: str
    sender: str
    lang: str
    text: str
    occurred_at: datetime


@dataclass(frozen=True, slots=True)
class DemoSearch:
    context: str  # "history" or "policies"
    lang: str
    query: str
    org_id: str | None = None


@dataclass(frozen=True, slots=True)
class DemoData:
    policies: list[DemoPolicy]
    messages: list[DemoMessage]
    searches: list[DemoSearch]

    @property
    def orgs(self) -> list[str]:
        return sorted({m.org_id for m in self.messages})

    def language_of(self, org_id: str, text: str) -> str | None:
        for message in self.messages:
            if message.org_id == org_id and message.text == text:
                return message.lang
        return None


def load_demo(now: datetime) -> DemoData:
    raw = json.loads(resources.files(__package__).joinpath("demo.json").read_text("utf-8"))
    policies = [DemoPolicy(**p) for p in raw["policies"]]
    messages = []
    for org in raw["orgs"]:
        for channel in org["channels"]:
            start = now - timedelta(minutes=channel["minutes_ago"])
            for i, message in enumerate(channel["messages"]):
                messages.append(
                    DemoMessage(
                        org_id=org["org_id"],
                        provider=channel["provider"],
                        channel_id=channel["channel_id"],
                        sender=message["sender"],
                        lang=message["lang"],
                        text=message["text"],
                        occurred_at=start + i * MESSAGE_SPACING,
                    )
                )
    searches = [DemoSearch(**s) for s in raw["searches"]]
    return DemoData(policies, messages, searches)
