from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from memory.application.embedding import ModelUnavailable

pytestmark = pytest.mark.anyio

SEMANTIC = "/v1/feature-flags/digital_worker_semantic_search"


async def ingest(client, org: str, events: list[dict[str, Any]]) -> dict[str, Any]:
    response = await client.post(f"/v1/orgs/{org}/chat-events", json={"events": events})
    assert response.status_code == 201, response.text
    return response.json()


def fields(response) -> list[str]:
    return [f["field"] for f in response.json()["error"]["details"]["fields"]]


async def test_ingest_sweep_and_hybrid_search(history_app, event) -> None:
    async with history_app() as client:
        body = await ingest(
            client,
            "acme",
            [
                event("how can I reset my password", minutes_ago=125, event_id="m1"),
                event("the reset link never arrives", minutes_ago=124, event_id="m2"),
                event("ok resending it now", minutes_ago=123, event_id="m3", sender="agent"),
                event("send me the March invoice", minutes_ago=60, event_id="i1"),
            ],
        )
        assert body == {"event_ids": ["m1", "m2", "m3", "i1"], "inserted": 4, "duplicates": 0}

        off = (await client.get("/v1/orgs/acme/history/search", params={"q": "password"})).json()
        assert off["semantic"] == "off" and "model" not in off
        assert [r["event_id"] for r in off["results"]] == ["m1"]
        assert off["results"][0] == {
            "event_id": "m1",
            "provider": "slack",
            "channel_id": "C1",
            "sender": "ali",
            "text": "how can I reset my password",
            "occurred_at": off["results"][0]["occurred_at"],
            "matched_by": "fts",
        }

        assert (await client.put(SEMANTIC, json={"enabled": True})).status_code == 200
        sweep = await client.post("/v1/sweep")
        assert sweep.status_code == 200
        assert sweep.json() == {
            "windows_embedded": 2,
            "windows_skipped": 0,
            "windows_poisoned": 0,
            "windows_open": 0,
            "events_poisoned": 0,
            "partitions": 1,
            "partitions_stalled": 0,
            "partitions_busy": 0,
            "partitions_interrupted": 0,
        }
        on = (
            await client.get("/v1/orgs/acme/history/search", params={"q": "password", "limit": "3"})
        ).json()
        assert on["semantic"] == "on" and on["model"] == "hash:1024"
        assert [(r["event_id"], r["matched_by"]) for r in on["results"]] == [
            ("m1", "fts"),
            ("m2", "semantic"),
            ("m3", "semantic"),
        ]
        semantic = on["results"][1]
        assert 0 < semantic["similarity"] <= 1 and semantic["window_id"]
        assert "relevance" not in semantic  # two windows: too few to calibrate
        assert on["results"][2]["window_id"] == semantic["window_id"]


async def test_semantic_hits_carry_their_relevance_and_min_relevance_filters(
    history_app, event
) -> None:
    async with history_app() as client:
        await client.put(SEMANTIC, json={"enabled": True})
        chatter = [
            event(f"lunch at the noodle stall number {n} today", channel_id=f"C{n}")
            for n in range(30)
        ]
        forklift = event("the forklift broke so the delivery is late", channel_id="F")
        await ingest(client, "acme", [forklift, *chatter])
        await client.post("/v1/sweep")
        url = "/v1/orgs/acme/history/search"
        q = {"q": "forklift delivery late please", "limit": "100"}
        everything = (await client.get(url, params=q | {"min_relevance": "0"})).json()
        semantic = [r for r in everything["results"] if r["matched_by"] == "semantic"]
        assert semantic[0]["text"].startswith("the forklift")
        scores = [r["relevance"] for r in semantic]
        assert scores == sorted(scores, reverse=True) and scores[-1] >= 0
        strict = (await client.get(url, params=q | {"min_relevance": "9.5"})).json()
        assert strict["semantic"] == "on" and strict["results"] == []


async def test_ingest_is_idempotent_over_http(history_app, event) -> None:
    async with history_app() as client:
        batch = [event("first message without an id"), event("second", event_id="client-1")]
        first = await ingest(client, "acme", batch)
        again = await ingest(client, "acme", batch)
        assert first["event_ids"] == again["event_ids"]
        assert first["event_ids"][1] == "client-1"
        assert (again["inserted"], again["duplicates"]) == (0, 2)


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        ({"occurred_at": "2026-03-02T09:00:00"}, "events.2.occurred_at"),
        ({"text": None}, "events.2.text"),
        ({"text": "nul \x00 inside"}, "events.2.text"),
        ({"provider": "Slack Inc"}, "events.2.provider"),
        ({"channel_id": ""}, "events.2.channel_id"),
        ({"sender": "tab\there"}, "events.2.sender"),
        ({"decision": "DENIED!"}, "events.2.decision"),
        ({"colour": "blue"}, "events.2.colour"),
        ({"event_id": "x" * 201}, "events.2.event_id"),
        ({"text": "x" * 32_001}, "events.2.text"),
        ({"sender": "s" * 257}, "events.2.sender"),
    ],
)
async def test_an_invalid_event_is_422_naming_its_index_and_field_and_nothing_is_stored(
    history_app, event, bad: dict[str, Any], field: str
) -> None:
    async with history_app() as client:
        events = [event("first good message"), event("second good message"), {**event("x"), **bad}]
        response = await client.post("/v1/orgs/acme/chat-events", json={"events": events})
        assert response.status_code == 422
        assert response.json()["error"]["code"] == "validation_error"
        assert field in fields(response)
        found = await client.get("/v1/orgs/acme/history/search", params={"q": "good"})
        assert found.json()["results"] == []


async def test_request_shape_errors(history_app, event) -> None:
    async with history_app() as client:
        url = "/v1/orgs/acme/chat-events"
        assert fields(await client.post(url, json={"events": []})) == ["events"]
        too_many = {"events": [event(f"m{i}") for i in range(1001)]}
        assert fields(await client.post(url, json=too_many)) == ["events"]
        assert fields(await client.post(url, content=b"{not json")) == ["body"]
        assert fields(await client.post(url, json=[event("x")])) == ["body"]
        bad_org = await client.post("/v1/orgs/bad org!/chat-events", json={"events": [event("x")]})
        assert bad_org.status_code == 422 and fields(bad_org) == ["org_id"]
        longest = event("x" * 32_000, event_id="x" * 200, sender="s" * 256, channel_id="c" * 256)
        assert (await client.post(url, json={"events": [longest]})).status_code == 201
        exactly = {"events": [event(f"m{i}", event_id=f"e{i}") for i in range(1000)]}
        assert (await client.post(url, json=exactly)).json()["inserted"] == 1000


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"q": "x", "limit": "0"}, "limit"),
        ({"q": "x", "limit": "101"}, "limit"),
        ({"q": "x", "limit": "ten"}, "limit"),
        ({}, "q"),
        ({"q": "   "}, "q"),
        ({"q": "x", "since": "2026-03-02T09:00:00"}, "since"),
        ({"q": "x", "since": "2026-03-02T09:00:00Z", "until": "2026-03-01T09:00:00Z"}, "until"),
        ({"q": "x", "sort": "new"}, "sort"),
        ({"q": "x", "min_relevance": "-1"}, "min_relevance"),
        ({"q": "x", "min_relevance": "10.5"}, "min_relevance"),
        ({"q": "x", "min_relevance": "nan"}, "min_relevance"),
        ({"q": "x", "min_relevance": "high"}, "min_relevance"),
        ({"q": "x", "min_relevance": ""}, "min_relevance"),
    ],
)
async def test_search_parameters_are_checked(history_app, params, field: str) -> None:
    async with history_app() as client:
        response = await client.get("/v1/orgs/acme/history/search", params=params)
        assert response.status_code == 422
        assert field in fields(response)


async def test_search_limits_at_the_edges(history_app, event) -> None:
    async with history_app() as client:
        await ingest(client, "acme", [event(f"password number {i}") for i in range(120)])
        for limit, expected in (("1", 1), ("100", 100)):
            got = await client.get(
                "/v1/orgs/acme/history/search", params={"q": "password", "limit": limit}
            )
            assert len(got.json()["results"]) == expected
        default = await client.get("/v1/orgs/acme/history/search", params={"q": "password"})
        assert len(default.json()["results"]) == 20


async def test_a_failing_model_degrades_search_never_errors(history_app, event, edge_model) -> None:
    async with history_app() as client:
        await client.put(SEMANTIC, json={"enabled": True})
        await ingest(client, "acme", [event("reset my password please")])
        await client.post("/v1/sweep")
        edge_model.failure = ModelUnavailable("hash:1024", "connection refused")
        response = await client.get("/v1/orgs/acme/history/search", params={"q": "password"})
        assert response.status_code == 200
        body = response.json()
        assert body["semantic"] == "degraded" and body["model"] == "hash:1024"
        assert [r["matched_by"] for r in body["results"]] == ["fts"]


async def test_a_slow_model_degrades_within_the_budget(history_app, event, edge_model) -> None:
    async with history_app(history_query_embed_timeout=0.2) as client:
        await client.put(SEMANTIC, json={"enabled": True})
        await ingest(client, "acme", [event("reset my password please")])
        edge_model.query_delay = 3.0
        with anyio.fail_after(2.0):
            response = await client.get("/v1/orgs/acme/history/search", params={"q": "reset"})
        assert response.json()["semantic"] == "degraded"


async def test_sweep_endpoints_report_progress_stalls_and_poison(
    history_app, event, edge_model
) -> None:
    async with history_app() as client:
        await client.put(SEMANTIC, json={"enabled": True})
        await ingest(
            client,
            "acme",
            [
                event("a normal question about the refund policy", minutes_ago=300),
                event("this one breaks the model POISON for sure", minutes_ago=200),
                event("the newest message, still an open window", minutes_ago=5),
            ],
        )
        await ingest(client, "globex", [event("globex has its own question here", minutes_ago=300)])

        status = (await client.get("/v1/orgs/acme/sweep")).json()
        assert status["model"] == "hash:1024" and status["semantic_search"] is True
        (part,) = status["partitions"]
        assert part["watermark"]["position"] is None
        assert part["lag"]["events"] == 3
        assert part["lag"]["oldest_closed_window_age_seconds"] >= 300 * 60 - 5

        edge_model.failure = ModelUnavailable("hash:1024", "down")
        stalled = (await client.post("/v1/sweep", json={"org_id": "acme"})).json()
        assert (stalled["partitions"], stalled["partitions_stalled"]) == (1, 1)
        (part,) = (await client.get("/v1/orgs/acme/sweep")).json()["partitions"]
        assert part["stalled"] is True and part["last_stall"]["reason"] == "model_unavailable"

        edge_model.failure = None
        edge_model.reject_marker = "POISON"
        report = (await client.post("/v1/sweep", json={"org_id": "acme"})).json()
        assert report["windows_embedded"] == 1
        assert (report["windows_poisoned"], report["windows_open"]) == (1, 1)
        (part,) = (await client.get("/v1/orgs/acme/sweep")).json()["partitions"]
        assert part["stalled"] is False
        assert part["lag"] == {"events": 1, "oldest_closed_window_age_seconds": None}
        assert part["open_windows"] == 1  # the newest message's conversation goes on
        assert part["watermark"]["position"]["event_id"]
        (poison,) = part["poison_windows"]
        assert poison["message_count"] == 1 and poison["reason"] == "input_rejected"
        assert "POISON" not in str(part)

        # A pass over every org visits only what has work: globex's new messages (acme's
        # open conversation is due when its 30-minute gap elapses, not before).
        everything = (await client.post("/v1/sweep", json={})).json()
        assert (everything["partitions"], everything["windows_embedded"]) == (1, 1)
        bad = await client.post("/v1/sweep", json={"org_id": "no spaces allowed"})
        assert bad.status_code == 422 and fields(bad) == ["org_id"]


async def test_feature_flag_endpoints(history_app, event, edge_model) -> None:
    async with history_app() as client:
        warm_up_calls = edge_model.query_calls  # the start-up's warm-up (ADR 0113)
        listed = (await client.get("/v1/feature-flags")).json()["flags"]
        assert {f["flag"]: (f["enabled"], f["default"], f["set"]) for f in listed} == {
            "digital_worker": (True, True, False),
            "digital_worker_semantic_search": (False, False, False),
        }
        put = await client.put(SEMANTIC, json={"enabled": True})
        assert put.json() == {
            "flag": "digital_worker_semantic_search",
            "enabled": True,
            "default": False,
            "set": True,
            "state": "on",
        }
        org = (await client.get("/v1/orgs/acme/feature-flags")).json()
        assert org["semantic_search"] is True
        flag_url = "/v1/orgs/acme/feature-flags/digital_worker_semantic_search"
        assert (await client.get(flag_url)).json() == {
            "org_id": "acme",
            "flag": "digital_worker_semantic_search",
            "global": True,
            "org": None,
            "effective": True,
            "global_state": "on",
        }
        opted_out = (await client.put(flag_url, json={"enabled": False})).json()
        assert (opted_out["org"], opted_out["effective"]) == (False, False)
        await ingest(client, "acme", [event("reset my password")])
        search = await client.get("/v1/orgs/acme/history/search", params={"q": "password"})
        assert search.json()["semantic"] == "off"
        assert edge_model.query_calls == warm_up_calls
        inherited = (await client.delete(flag_url)).json()
        assert (inherited["org"], inherited["effective"]) == (None, True)
        module = await client.put(
            "/v1/orgs/acme/feature-flags/digital_worker", json={"enabled": False}
        )
        assert module.json()["effective"] is False
        assert (await client.get("/v1/orgs/acme/feature-flags")).json()["semantic_search"] is False

        unknown = await client.put("/v1/feature-flags/dark_mode", json={"enabled": True})
        assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "not_found"
        unknown_org = await client.get("/v1/orgs/acme/feature-flags/dark_mode")
        assert unknown_org.status_code == 404
        for body in ({"enabled": "yes"}, {}, {"enabled": True, "x": 1}):
            bad = await client.put(SEMANTIC, json=body)
            assert bad.status_code == 422
        assert (await client.get(SEMANTIC)).json()["enabled"] is True  # unchanged


async def test_opt_in_turns_semantic_search_on_for_the_orgs_that_opt_in_only(
    history_app, event
) -> None:
    async with history_app() as client:
        for org in ("acme", "globex"):
            await ingest(client, org, [event("how can I reset my password", minutes_ago=125)])
        put = await client.put(SEMANTIC, json={"state": "opt_in"})
        assert put.status_code == 200
        assert put.json() == {
            "flag": "digital_worker_semantic_search",
            "enabled": True,
            "default": False,
            "set": True,
            "state": "opt_in",
        }
        acme_flag = "/v1/orgs/acme/feature-flags/digital_worker_semantic_search"
        opted = (await client.put(acme_flag, json={"enabled": True})).json()
        assert (opted["global_state"], opted["org"], opted["effective"]) == ("opt_in", True, True)
        assert (await client.post("/v1/sweep")).json()["partitions"] == 1  # acme's only
        for org, semantic in (("acme", "on"), ("globex", "off"), ("newcomer", "off")):
            found = await client.get(f"/v1/orgs/{org}/history/search", params={"q": "password"})
            assert found.json()["semantic"] == semantic, org
        globex = (await client.get("/v1/orgs/globex/feature-flags")).json()
        assert globex["semantic_search"] is False
        entry = next(f for f in globex["flags"] if f["flag"] == "digital_worker_semantic_search")
        assert entry == {
            "flag": "digital_worker_semantic_search",
            "global": True,
            "org": None,
            "effective": False,
            "global_state": "opt_in",
        }
        off_by = (
            await client.get("/v1/orgs/globex/history/search", params={"q": "password"})
        ).json()["semantic_off_by"]
        assert off_by == {"flag": "digital_worker_semantic_search", "layer": "org", "default": True}
        audit = (await client.get("/v1/audit")).json()["entries"]
        flags = [e for e in audit if e["action"] == "feature_flag.global.set"]
        assert [(e["before"], e["after"]) for e in flags] == [(None, "opt_in")]

        # Exactly one of state and enabled; a refused body changes nothing.
        for body, field in (
            ({"state": "on", "enabled": True}, "state"),
            ({"state": "maybe"}, "state"),
            ({"state": None}, "state"),
            ({}, "state"),
        ):
            refused = await client.put(SEMANTIC, json=body)
            assert refused.status_code == 422 and fields(refused) == [field], body
        assert (await client.get(SEMANTIC)).json()["state"] == "opt_in"
        back = await client.put(SEMANTIC, json={"enabled": False})
        assert (back.json()["state"], back.json()["enabled"]) == ("off", False)


async def test_retention_endpoints_and_purge(history_app, event) -> None:
    async with history_app() as client:
        await client.put(SEMANTIC, json={"enabled": True})
        assert (await client.get("/v1/orgs/acme/retention")).json() == {
            "org_id": "acme",
            "days": 30,
            "default": True,
        }
        await ingest(
            client,
            "acme",
            [
                event("an old conversation about the password", minutes_ago=40 * 24 * 60),
                event("a recent conversation about the password", minutes_ago=600),
            ],
        )
        assert (await client.post("/v1/sweep")).json()["windows_embedded"] == 2
        assert (await client.put("/v1/orgs/acme/retention", json={"days": 0})).status_code == 422
        assert (await client.put("/v1/orgs/acme/retention", json={"days": 3651})).status_code == 422
        set_days = await client.put("/v1/orgs/acme/retention", json={"days": 35})
        assert set_days.json() == {"org_id": "acme", "days": 35, "default": False}
        purged = (await client.post("/v1/purge", json={"org_id": "acme"})).json()
        assert purged == {"orgs": 1, "events_deleted": 1, "embeddings_deleted": 1}
        found = (
            await client.get("/v1/orgs/acme/history/search", params={"q": "conversation old"})
        ).json()
        assert all("old" not in r["text"] for r in found["results"])
        assert (await client.post("/v1/purge")).json()["events_deleted"] == 0


async def test_health_and_metrics_report_the_history_context(history_app, event) -> None:
    async with history_app() as client:
        await client.put(SEMANTIC, json={"enabled": True})
        await ingest(client, "acme", [event("reset my password please")])
        await client.post("/v1/sweep")
        await client.get("/v1/orgs/acme/history/search", params={"q": "password"})
        health = (await client.get("/healthz")).json()["contexts"]["history"]
        assert health["model"]["id"] == "hash:1024" and health["model"]["available"] is True
        assert health["sweep"]["last_run"]["windows_embedded"] == 1
        assert health["sweep"]["last_run"]["outcome"] == "ok"
        metrics = (await client.get("/metrics")).text
        for name in (
            "memory_history_ingested_events_total",
            "memory_history_sweep_windows_total",
            "memory_history_sweep_seconds",
            "memory_history_searches_total",
            "memory_history_purged_total",
        ):
            assert name in metrics
        assert 'memory_history_searches_total{semantic="on"}' in metrics


@pytest.mark.parametrize("days", [True, False, "30", 30.0, None, [30]])
async def test_retention_days_must_be_a_json_integer_and_a_refusal_changes_nothing(
    history_app, event, days
) -> None:
    async with history_app() as client:
        await ingest(client, "acme", [event("recent enough to survive", minutes_ago=600)])
        refused = await client.put("/v1/orgs/acme/retention", json={"days": days})
        assert refused.status_code == 422 and fields(refused) == ["days"]
        assert (await client.get("/v1/orgs/acme/retention")).json()["default"] is True
        assert (await client.post("/v1/purge")).json()["events_deleted"] == 0


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/orgs/acme/feature-flags/digital_worker", {"enabled": 1}, "enabled"),
        ("/v1/feature-flags/digital_worker_semantic_search", {"enabled": "true"}, "enabled"),
    ],
)
async def test_flags_are_json_booleans_only(history_app, path: str, body, field: str) -> None:
    async with history_app() as client:
        refused = await client.put(path, json=body)
        assert refused.status_code == 422 and fields(refused) == [field]


async def test_ingest_and_sweep_bodies_are_strictly_typed(history_app, event) -> None:
    async with history_app() as client:
        url = "/v1/orgs/acme/chat-events"
        for bad, field in (
            ({**event("x"), "text": 5}, "events.0.text"),
            (event("x", sender=True), "events.0.sender"),
            (event("x", occurred_at=1_767_225_600), "events.0.occurred_at"),
            (event("x", event_id=7), "events.0.event_id"),
        ):
            assert fields(await client.post(url, json={"events": [bad]})) == [field]
        assert fields(await client.post("/v1/sweep", json={"org_id": 5})) == ["org_id"]
        assert (await client.get("/v1/orgs/acme/sweep")).json()["partitions"] == []


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ("q=pass%00word", "q"),
        ("q=x&channel_id=C%001", "channel_id"),
        ("q=x&provider=%00", "provider"),
        ("q=x&limit=%2B5", "limit"),
        ("q=x&limit=5.0", "limit"),
        ("q=x&limit=1_0", "limit"),
    ],
)
async def test_search_query_text_is_checked_not_a_500(history_app, params: str, field) -> None:
    async with history_app() as client:
        response = await client.get(f"/v1/orgs/acme/history/search?{params}")
        assert response.status_code == 422 and field in fields(response)


@pytest.mark.parametrize(
    ("events", "field", "reason"),
    [
        ([{"text": "lone \ud800 surrogate"}], "events.0.text", "lone surrogates"),
        ([{}, {"sender": "x\udfff"}], "events.1.sender", "lone surrogates"),
        ([{"channel_id": "C\x00"}], "events.0.channel_id", "NUL"),
        ([{"text": "nul \x00 inside"}], "events.0.text", "NUL"),
    ],
)
async def test_unsafe_text_in_a_body_is_422_naming_the_field(
    history_app, event, events, field: str, reason: str
) -> None:
    async with history_app() as client:
        body = {"events": [{**event("fine text"), **changes} for changes in events]}
        response = await client.post(
            "/v1/orgs/acme/chat-events",
            content=json.dumps(body).encode(),  # ASCII-escaped, as a client would send it
            headers={"content-type": "application/json"},
        )
        assert response.status_code == 422
        (problem,) = response.json()["error"]["details"]["fields"]
        assert problem["field"] == field and reason in problem["reason"]
        assert (await client.get("/v1/orgs/acme/sweep")).json()["partitions"] == []


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/v1/orgs/acme/chat-events"),
        ("POST", "/v1/sweep"),
        ("POST", "/v1/purge"),
        ("PUT", "/v1/feature-flags/digital_worker_semantic_search"),
        ("PUT", "/v1/orgs/acme/feature-flags/digital_worker"),
        ("PUT", "/v1/orgs/acme/retention"),
    ],
)
async def test_a_json_integer_of_5000_digits_is_422_naming_the_body(
    history_app, method: str, path: str
) -> None:
    async with history_app() as client:
        body = b'{"days": ' + b"9" * 5000 + b"}"
        response = await client.request(
            method, path, content=body, headers={"content-type": "application/json"}
        )
        assert response.status_code == 422 and fields(response) == ["body"]
        assert "digits" in response.json()["error"]["details"]["fields"][0]["reason"]


async def test_unsafe_path_segments_are_422_not_500(history_app) -> None:
    async with history_app() as client:
        for path, field in (
            ("/v1/feature-flags/a%00b", "flag"),
            ("/v1/orgs/acme/feature-flags/a%00b", "flag"),
            ("/v1/orgs/a%00b/retention", "org_id"),
        ):
            response = await client.get(path)
            assert response.status_code == 422 and fields(response) == [field]


async def test_erasure_endpoints(history_app, event) -> None:
    async with history_app() as client:
        await ingest(
            client,
            "acme",
            [
                event("how can I reset my password", minutes_ago=125, event_id="m1"),
                event("the reset link never arrives", minutes_ago=124, event_id="m2"),
                event("send me the March invoice", minutes_ago=60, event_id="i1", sender="bob"),
            ],
        )
        assert (await client.put(SEMANTIC, json={"enabled": True})).status_code == 200
        assert (await client.post("/v1/sweep")).status_code == 200

        both = await client.request(
            "DELETE", "/v1/orgs/acme/chat-events", json={"event_ids": ["m1"], "sender": "bob"}
        )
        assert (both.status_code, fields(both)) == (422, ["body"])
        typed = await client.request("DELETE", "/v1/orgs/acme/chat-events", json={"sender": 5})
        assert (typed.status_code, fields(typed)) == (422, ["sender"])

        by_id = await client.request(
            "DELETE", "/v1/orgs/acme/chat-events", json={"event_ids": ["m2"]}
        )
        assert by_id.status_code == 200, by_id.text
        assert by_id.json() == {"events_deleted": 1, "windows_deleted": 1}
        by_sender = await client.request(
            "DELETE", "/v1/orgs/acme/chat-events", json={"sender": "bob"}
        )
        assert by_sender.json() == {"events_deleted": 1, "windows_deleted": 1}
        found = (await client.get("/v1/orgs/acme/history/search", params={"q": "reset"})).json()
        assert [r["event_id"] for r in found["results"]] == ["m1"]

        erased = await client.delete("/v1/orgs/acme")
        assert erased.status_code == 200, erased.text
        assert erased.json() == {
            "org_id": "acme",
            "events_deleted": 1,
            "windows_deleted": 0,
            "partitions_deleted": 1,
            "watermarks_closed": 1,
            "flags_deleted": 0,
            "retention_deleted": False,
        }
        after = (await client.get("/v1/orgs/acme/history/search", params={"q": "reset"})).json()
        assert after["results"] == []


async def test_type_errors_and_rule_errors_are_named_in_one_422_and_change_nothing(
    history_app, event
) -> None:
    """A field of the wrong type no longer hides the rules the other fields break."""
    async with history_app() as client:
        in_a_year = event("from the future", minutes_ago=-60 * 24 * 365, event_id="f1")
        wrong_type = {**event("fine otherwise", event_id="t1"), "text": 5}
        ingested = await client.post(
            "/v1/orgs/acme/chat-events", json={"events": [in_a_year, wrong_type]}
        )
        assert ingested.status_code == 422, ingested.text
        assert set(fields(ingested)) == {"events.0.occurred_at", "events.1.text"}
        bad_org = await client.post("/v1/orgs/ACME!/chat-events", json={"events": [in_a_year]})
        assert set(fields(bad_org)) == {"org_id", "events.0.occurred_at"}
        searched = await client.get("/v1/orgs/acme/history/search", params={"q": "future"})
        assert searched.json()["results"] == [] and searched.json()["org_known"] is False

        next_year = in_a_year["occurred_at"]
        search = await client.get(
            "/v1/orgs/acme/history/search", params={"q": "x", "limit": "ten", "since": next_year}
        )
        assert search.status_code == 422, search.text
        assert set(fields(search)) == {"limit", "since"}

        flag_url = "/v1/orgs/ACME!/feature-flags/digital_worker_semantic_search"
        flag = await client.put(flag_url, json={"enabled": "yes"})
        assert flag.status_code == 422, flag.text
        assert set(fields(flag)) == {"org_id", "enabled"}
        retention = await client.put("/v1/orgs/ACME!/retention", json={"days": "30"})
        assert set(fields(retention)) == {"org_id", "days"}
        out_of_range = await client.put("/v1/orgs/ACME!/retention", json={"days": 0})
        assert set(fields(out_of_range)) == {"org_id", "days"}
        assert (await client.get("/v1/orgs/acme/retention")).json()["default"] is True
        org_flags = (await client.get("/v1/orgs/acme/feature-flags")).json()["flags"]
        assert all(f["org"] is None for f in org_flags)
        erase = await client.request(
            "DELETE", "/v1/orgs/ACME!/chat-events", json={"event_ids": "f1"}
        )
        assert erase.status_code == 422, erase.text
        assert set(fields(erase)) == {"org_id", "event_ids"}
