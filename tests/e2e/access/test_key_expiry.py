"""Keys that expire, over HTTP: created with `expires_at` or `expires_in_days`, listed with
their expiry, refused with 401 `key_expired` from then on, and bounds refused with a 422
naming the field (docs/security.md, "Rotating a key")."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from tests.e2e.access.conftest import FullApp

from memory.application.access.authentication import KEY_CACHE_SECONDS
from memory.domain.access.api_key import MAX_KEY_LIFETIME_DAYS

pytestmark = pytest.mark.anyio

# Long enough for a first request to get through on a loaded machine.
SHORT_LIFE = timedelta(seconds=2)


async def test_an_expired_key_answers_401_key_expired_within_the_cache_window(
    full_app: FullApp,
) -> None:
    async with full_app() as running:
        expires_at = datetime.now(UTC) + SHORT_LIFE
        created = await running.admin.post(
            "/v1/api-keys",
            json={
                "name": "short-lived",
                "org_id": "acme",
                "scopes": ["history:read"],
                "expires_at": expires_at.isoformat(),
            },
        )
        assert created.status_code == 201, created.text
        body = created.json()
        assert datetime.fromisoformat(body["expires_at"]) == expires_at
        async with running.client(body["secret"]) as client:
            assert (await client.get("/v1/orgs/acme/sweep")).status_code == 200  # now cached
            await asyncio.sleep((expires_at - datetime.now(UTC)).total_seconds())
            refused = await client.get("/v1/orgs/acme/sweep")
            assert refused.status_code == 401, refused.text
            error = refused.json()["error"]
            assert error["code"] == "key_expired"
            assert "expired" in error["message"]
            assert error["details"] == {
                "key_id": body["key_id"],
                "expired_at": expires_at.isoformat(),
            }
            assert refused.headers["www-authenticate"].startswith("Bearer")
            # After the cache window, from the database: still expired, not "unknown".
            await asyncio.sleep(KEY_CACHE_SECONDS)
            again = await client.get("/v1/orgs/acme/sweep")
            assert again.status_code == 401 and again.json()["error"]["code"] == "key_expired"
        listed = (await running.admin.get("/v1/api-keys")).json()["keys"]
        mine = next(k for k in listed if k["key_id"] == body["key_id"])
        assert datetime.fromisoformat(mine["expires_at"]) == expires_at
        assert mine["revoked_at"] is None


async def test_expires_in_days_and_a_key_without_expiry(full_app: FullApp) -> None:
    async with full_app() as running:
        before = datetime.now(UTC)
        created = await running.admin.post(
            "/v1/api-keys", json={"name": "monthly", "scopes": ["admin"], "expires_in_days": 30}
        )
        assert created.status_code == 201, created.text
        expires = datetime.fromisoformat(created.json()["expires_at"])
        assert before + timedelta(days=30) <= expires <= datetime.now(UTC) + timedelta(days=30)
        forever = await running.admin.post(
            "/v1/api-keys", json={"name": "forever", "scopes": ["admin"]}
        )
        assert forever.status_code == 201 and forever.json()["expires_at"] is None
        async with running.client(created.json()["secret"]) as monthly:
            assert (await monthly.get("/v1/api-keys")).status_code == 200


@pytest.mark.parametrize(
    ("expiry", "field"),
    [
        ({"expires_at": "2020-01-01T00:00:00Z"}, "expires_at"),
        ({"expires_at": "2999-01-01T00:00:00Z"}, "expires_at"),
        ({"expires_at": "2030-01-01T00:00:00"}, "expires_at"),  # no time zone
        ({"expires_at": 1900000000}, "expires_at"),  # not a date-time string
        ({"expires_in_days": 0}, "expires_in_days"),
        ({"expires_in_days": MAX_KEY_LIFETIME_DAYS + 1}, "expires_in_days"),
        ({"expires_in_days": "30"}, "expires_in_days"),
        ({"expires_in_days": True}, "expires_in_days"),
        ({"expires_in_days": 1, "expires_at": "2030-01-01T00:00:00Z"}, "expires_in_days"),
    ],
)
async def test_an_expiry_out_of_bounds_is_422_naming_the_field_and_creates_nothing(
    full_app: FullApp, expiry: dict[str, object], field: str
) -> None:
    async with full_app() as running:
        keys_before = (await running.admin.get("/v1/api-keys")).json()["keys"]
        refused = await running.admin.post(
            "/v1/api-keys", json={"name": "bot", "scopes": ["admin"], **expiry}
        )
        assert refused.status_code == 422, refused.text
        fields = [f["field"] for f in refused.json()["error"]["details"]["fields"]]
        assert field in fields
        assert (await running.admin.get("/v1/api-keys")).json()["keys"] == keys_before


async def test_a_new_key_with_type_and_rule_errors_names_every_field_and_creates_nothing(
    full_app: FullApp,
) -> None:
    """A field of the wrong type no longer hides the rules the other fields break."""
    async with full_app() as running:
        before = (await running.admin.get("/v1/api-keys")).json()["keys"]
        past = (datetime.now(UTC) - timedelta(days=1)).isoformat()
        refused = await running.admin.post(
            "/v1/api-keys",
            json={"name": 5, "scopes": ["history:read", "root"], "expires_at": past},
        )
        assert refused.status_code == 422, refused.text
        problems = {f["field"]: f["reason"] for f in refused.json()["error"]["details"]["fields"]}
        assert set(problems) == {"name", "scopes", "expires_at"}
        assert "unknown scope 'root'" in problems["scopes"]
        assert problems["expires_at"] == "must be in the future"

        rules_only = await running.admin.post(
            "/v1/api-keys",
            json={"name": " ", "scopes": ["root"], "expires_in_days": MAX_KEY_LIFETIME_DAYS},
        )
        fields = {f["field"] for f in rules_only.json()["error"]["details"]["fields"]}
        assert (rules_only.status_code, fields) == (422, {"name", "scopes"})
        assert (await running.admin.get("/v1/api-keys")).json()["keys"] == before
        audit = (await running.admin.get("/v1/audit")).json()["entries"]
        assert not [e for e in audit if e["action"] == "api_key.created"]
