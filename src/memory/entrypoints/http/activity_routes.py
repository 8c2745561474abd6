"""The console's last-hour trends over HTTP (docs/adr/0122): `GET /v1/activity` (the whole
service: a key for every org) and `GET /v1/orgs/{org_id}/activity` (one org: a key for it).
Each is two indexed reads of at most 60 rows; nothing visits a partition."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from memory.application.history.activity import HistoryActivity
from memory.contract.activity_presenter import activity_body
from memory.contract.history_requests import OrgPath
from memory.domain.access.scopes import Scope
from memory.entrypoints.http.access import Access, AccessTable
from memory.entrypoints.http.answer import AnswerResponse
from memory.entrypoints.http.database_stall import watched
from memory.entrypoints.http.parsing import validate

ORG_ACTIVITY = "/v1/orgs/{org_id}/activity"

# The service's figures count every org's searches: an every-org key; an org's own figures:
# any key with the history scope for that org.
ACCESS: AccessTable = {
    ("GET", "/v1/activity"): Access.every_org(Scope.HISTORY_READ),
    ("GET", ORG_ACTIVITY): Access.org(Scope.HISTORY_READ),
}


def activity_routes(activity: HistoryActivity) -> list[BaseRoute]:
    async def service_activity(request: Request) -> Response:
        trend = await watched(activity.last_hour)
        return AnswerResponse(activity_body(trend))

    async def org_activity(request: Request) -> Response:
        org_id = validate(OrgPath, {"org_id": request.path_params["org_id"]}).org_id
        trend = await watched(lambda: activity.last_hour(org_id))
        return AnswerResponse(activity_body(trend))

    return [
        Route("/v1/activity", service_activity, methods=["GET"]),
        Route(ORG_ACTIVITY, org_activity, methods=["GET"]),
    ]
