"""Policy namespaces and the reach of a caller (docs/adr/0102), and events recorded before
either existed (docs/adr/0103)."""

from __future__ import annotations

import json
from dataclasses import replace
from uuid import uuid5

import pytest
from eventsourcing.persistence import StoredEvent
from tests.fakes import TEST_ACTOR

from memory.application.policy.reach import EVERY_ORG, NamespaceForbidden, Reach
from memory.domain.embedding import EmbeddingVector, ModelIdentity
from memory.domain.errors import InvalidInput
from memory.domain.policy.aggregate import POLICY_NAMESPACE, PolicyEmbedding
from memory.domain.policy.content import PolicyContent
from memory.domain.policy.metadata import PolicyMetadata
from memory.domain.policy.namespace import GLOBAL, PolicyAddress, PolicyNamespace
from memory.domain.policy.policy_id import PolicyId
from memory.domain.policy.versions import version_history
from memory.infrastructure.policy.event_store import EventSourcedPolicyLog

ACME = PolicyNamespace.of_org("acme")
GLOBEX = PolicyNamespace.of_org("globex")


@pytest.mark.parametrize(
    ("text", "namespace"),
    [("global", GLOBAL), ("org:acme", ACME), ("org:a.b:c-d_9", PolicyNamespace("a.b:c-d_9"))],
)
def test_a_namespace_is_named_global_or_org_and_its_name_reads_back(
    text: str, namespace: PolicyNamespace
) -> None:
    assert PolicyNamespace.parse(text) == namespace
    assert namespace.text == text


@pytest.mark.parametrize(
    "text", ["", "acme", "Global", "org:", "org:-acme", "org:a/b", "org:" + "a" * 129, "org: x"]
)
def test_anything_else_is_refused_naming_the_field(text: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        PolicyNamespace.parse(text, field="namespace")
    assert refused.value.field == "namespace"


def test_a_global_policy_keeps_the_aggregate_id_it_had_before_namespaces() -> None:
    pid = PolicyId.parse("pw-reset")
    assert PolicyAddress(GLOBAL, pid).aggregate_id == uuid5(POLICY_NAMESPACE, "pw-reset")
    ids = {PolicyAddress(n, pid).aggregate_id for n in (GLOBAL, ACME, GLOBEX)}
    assert len(ids) == 3
    # An org id that looks like a path cannot reach another org's or a global policy.
    assert PolicyAddress(PolicyNamespace("a"), PolicyId.parse("b")).aggregate_id not in {
        PolicyAddress(GLOBAL, PolicyId.parse("a")).aggregate_id,
        PolicyAddress(PolicyNamespace("a:b"), pid).aggregate_id,
    }


def test_an_org_sees_its_own_then_the_global_policies_and_global_sees_only_itself() -> None:
    assert ACME.visible() == (ACME, GLOBAL)
    assert GLOBAL.visible() == (GLOBAL,)


READS = [
    (EVERY_ORG, None, GLOBAL),
    (EVERY_ORG, "org:acme", ACME),
    (Reach("acme"), None, ACME),
    (Reach("acme"), "org:acme", ACME),
    (Reach("acme"), "global", GLOBAL),
]


@pytest.mark.parametrize(("reach", "named", "stands_in"), READS)
def test_where_a_read_stands(reach: Reach, named: str | None, stands_in: PolicyNamespace) -> None:
    assert reach.reading(named) == stands_in


@pytest.mark.parametrize(
    ("reach", "named", "lands"),
    [
        (EVERY_ORG, None, GLOBAL),
        (EVERY_ORG, "global", GLOBAL),
        (EVERY_ORG, "org:globex", GLOBEX),
        (Reach("acme"), None, ACME),
        (Reach("acme"), "org:acme", ACME),
        (Reach("acme"), "global", None),
        (Reach("acme"), "org:globex", None),
    ],
)
def test_where_a_write_lands_or_that_it_is_forbidden(
    reach: Reach, named: str | None, lands: PolicyNamespace | None
) -> None:
    if lands is not None:
        assert reach.writing(named) == lands
        return
    with pytest.raises(NamespaceForbidden) as refused:
        reach.writing(named)
    assert refused.value.details == {"field": "namespace"}


def test_an_org_key_reading_another_org_is_forbidden() -> None:
    with pytest.raises(NamespaceForbidden):
        Reach("acme").reading("org:globex")


def _stored(namespace: PolicyNamespace) -> PolicyEmbedding:
    return PolicyEmbedding.store(
        PolicyAddress(namespace, PolicyId.parse("p1")),
        PolicyContent.parse("text", max_chars=10),
        PolicyMetadata(),
        ModelIdentity("hash:384", 384),
        EmbeddingVector(tuple([1.0] + [0.0] * 383)),
        actor=TEST_ACTOR,
    )


def test_events_name_the_namespace_and_the_actor() -> None:
    aggregate = _stored(ACME)
    aggregate.update_metadata(PolicyMetadata.parse({"title": "t"}), actor=TEST_ACTOR)
    aggregate.delete(actor=replace(TEST_ACTOR, key_id="cli", name="cli:ops"))
    events = aggregate.collect_events()
    assert isinstance(events[0], PolicyEmbedding.Stored) and events[0].org_id == "acme"
    history = version_history(events)
    assert [v.actor for v in history] == [
        TEST_ACTOR,
        TEST_ACTOR,
        replace(TEST_ACTOR, key_id="cli", name="cli:ops"),
    ]
    assert {v.namespace for v in history} == {ACME}


def test_an_event_recorded_before_namespaces_and_actors_reads_as_global_and_unknown(
    memory_log: EventSourcedPolicyLog,
) -> None:
    """The state of a version-1 `Stored` event, as stored before this change."""
    mapper = memory_log.app.mapper
    (event,) = _stored(GLOBAL).collect_events()
    stored = mapper.to_stored_event(event)
    state = json.loads(stored.state)
    assert state.pop("class_version") == 2
    for field in ("org_id", "actor_key_id", "actor_name"):
        del state[field]
    old = StoredEvent(
        originator_id=stored.originator_id,
        originator_version=stored.originator_version,
        topic=stored.topic,
        state=json.dumps(state).encode(),
    )

    decoded = mapper.to_domain_event(old)

    assert isinstance(decoded, PolicyEmbedding.Stored)
    assert (decoded.org_id, decoded.actor_key_id, decoded.actor_name) == (None, None, None)
    (version,) = version_history([decoded])
    assert version.actor is None and version.namespace == GLOBAL
    aggregate = decoded.mutate(None)
    assert aggregate is not None and aggregate.namespace == GLOBAL
