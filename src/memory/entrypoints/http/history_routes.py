"""HTTP API of the history context: ingest, search, the sweep, feature flags, retention.

Handlers parse and validate at the edge (422 naming the field), call `HistoryService` in a
worker thread (it does database and model I/O), and answer with the model its presenter
(`memory.entrypoints.presenters.history`) makes of the result.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from memory.application.access.key_administration import actor_of
from memory.application.history.service import HistoryService
from memory.contract.history_requests import (
    ChatEventBody,
    EraseBody,
    FlagBody,
    FlagPath,
    GlobalFlagSetBody,
    IngestBody,
    OrgFlagPath,
    OrgListingParams,
    OrgPath,
    RetentionBody,
    SearchParams,
    SweepBody,
    SweepStatusParams,
)
from memory.domain.access.scopes import Scope
from memory.domain.audit.admin_action import Actor
from memory.domain.errors import InvalidInput
from memory.domain.history.feature_flags import GlobalState
from memory.domain.history.search import HistoryQuery
from memory.entrypoints.http.access import Access, AccessTable, api_key, visible_orgs
from memory.entrypoints.http.answer import AnswerResponse
from memory.entrypoints.http.database_stall import watched
from memory.entrypoints.http.parsing import (
    RequestChecks,
    parse_body,
    parse_query,
    validate,
    well_typed_items,
)
from memory.entrypoints.presenters import history as present

ORG = "/v1/orgs/{org_id}"

# Who may call what (docs/security.md): reads and ingest need the history scope for the org
# in the path; changing an org's flags or retention needs admin for that org; what acts on
# every org (global flags, sweeps, purges) needs an admin key for every org.
ACCESS: AccessTable = {
    ("POST", f"{ORG}/chat-events"): Access.org(Scope.HISTORY_WRITE),
    # Erasure removes data for good: the org's admins only.
    ("DELETE", f"{ORG}/chat-events"): Access.org(Scope.ADMIN),
    ("DELETE", ORG): Access.org(Scope.ADMIN),
    ("GET", f"{ORG}/history/search"): Access.org(Scope.HISTORY_READ),
    ("POST", "/v1/sweep"): Access.every_org(Scope.ADMIN),
    ("GET", f"{ORG}/sweep"): Access.org(Scope.HISTORY_READ),
    ("GET", f"{ORG}/search-indexes"): Access.org(Scope.HISTORY_READ),
    ("GET", "/v1/feature-flags"): Access.any_org(Scope.HISTORY_READ),
    ("GET", "/v1/feature-flags/{flag}"): Access.any_org(Scope.HISTORY_READ),
    ("PUT", "/v1/feature-flags/{flag}"): Access.every_org(Scope.ADMIN),
    ("GET", f"{ORG}/feature-flags"): Access.org(Scope.HISTORY_READ),
    ("GET", f"{ORG}/feature-flags/{{flag}}"): Access.org(Scope.HISTORY_READ),
    ("PUT", f"{ORG}/feature-flags/{{flag}}"): Access.org(Scope.ADMIN),
    ("DELETE", f"{ORG}/feature-flags/{{flag}}"): Access.org(Scope.ADMIN),
    ("GET", f"{ORG}/retention"): Access.org(Scope.HISTORY_READ),
    ("PUT", f"{ORG}/retention"): Access.org(Scope.ADMIN),
    ("POST", "/v1/purge"): Access.every_org(Scope.ADMIN),
    # The directory: an every-org key sees every org, an org's key that org only.
    ("GET", "/v1/orgs"): Access.own_orgs(Scope.HISTORY_READ),
}


def history_routes(service: HistoryService) -> list[BaseRoute]:
    async def ingest(request: Request) -> Response:
        checks = RequestChecks()
        org = checks.path(request, OrgPath)
        body = await checks.body(request, IngestBody)
        await checks.rules(
            lambda: service.check_ingest(
                {
                    index: event.to_domain()
                    for index, event in well_typed_items(
                        ChatEventBody, checks.raw.get("events")
                    ).items()
                }
            )
        )
        checks.raise_any()
        assert org is not None and body is not None
        org_id = org.org_id
        events = [e.to_domain() for e in body.events]
        result = await watched(lambda: service.ingest(org_id, events))
        return AnswerResponse(present.ingest_receipt_body(result), 201)

    async def search(request: Request) -> Response:
        checks = RequestChecks()
        org = checks.path(request, OrgPath)
        params = checks.query(request, SearchParams)
        await checks.rules(
            lambda: service.check_search(
                since=checks.valid.get("since"), until=checks.valid.get("until")
            )
        )
        checks.raise_any()
        assert org is not None and params is not None
        org_id = org.org_id
        query = HistoryQuery(
            text=params.q,
            limit=params.limit,
            provider=params.provider,
            channel_id=params.channel_id,
            since=params.since,
            until=params.until,
            min_relevance=params.min_relevance,
        )
        result = await watched(lambda: service.search(org_id, query))
        return AnswerResponse(present.search_body(result))

    async def list_orgs(request: Request) -> Response:
        params = parse_query(request, OrgListingParams)
        visible = visible_orgs(request.scope)
        page = await watched(
            lambda: service.orgs(
                limit=params.limit, prefix=params.prefix, cursor=params.cursor, visible=visible
            )
        )
        return AnswerResponse(present.org_directory_body(page))

    async def sweep(request: Request) -> Response:
        body = await parse_body(request, SweepBody, when_empty=SweepBody())
        actor = _actor(request)
        report = await watched(
            lambda: service.sweep(body.org_id, trigger="api", wait_for_locks=True, actor=actor)
        )
        return AnswerResponse(present.sweep_report_body(report))

    async def sweep_status(request: Request) -> Response:
        checks = RequestChecks()
        org = checks.path(request, OrgPath)
        params = checks.query(request, SweepStatusParams)
        checks.raise_any()
        assert org is not None and params is not None
        org_id = org.org_id
        status = await watched(
            lambda: service.sweep_status(org_id, limit=params.limit, cursor=params.cursor)
        )
        return AnswerResponse(present.sweep_status_body(status))

    async def search_indexes(request: Request) -> Response:
        org_id = _org(request)
        found = await watched(lambda: service.search_indexes(org_id))
        return AnswerResponse(present.org_search_indexes_body(found))

    async def list_global_flags(request: Request) -> Response:
        flags = await watched(service.global_flags)
        return AnswerResponse(present.global_flags_body(flags))

    async def global_flag(request: Request) -> Response:
        flag = _flag(request)
        if request.method == "PUT":
            state = _global_state(await parse_body(request, GlobalFlagSetBody))
            found = await watched(
                lambda: service.set_global_flag(flag, state, actor=_actor(request))
            )
        else:
            found = await watched(lambda: service.global_flag(flag))
        return AnswerResponse(present.global_flag_body(found))

    async def list_org_flags(request: Request) -> Response:
        org_id = _org(request)
        flags = await watched(lambda: service.org_flags(org_id))
        semantic = await watched(lambda: service.semantic_search(org_id))
        return AnswerResponse(present.org_flags_body(org_id, flags, semantic))

    async def org_flag(request: Request) -> Response:
        if request.method == "PUT":
            checks = RequestChecks()
            path = checks.path(request, OrgFlagPath)
            body = await checks.body(request, FlagBody)
            checks.raise_any()
            assert path is not None and body is not None
            org_id, flag = path.org_id, path.flag
            found = await watched(
                lambda: service.set_org_flag(org_id, flag, body.enabled, actor=_actor(request))
            )
        elif request.method == "DELETE":
            org_id, flag = _org(request), _flag(request)
            found = await watched(
                lambda: service.set_org_flag(org_id, flag, None, actor=_actor(request))
            )
        else:
            org_id, flag = _org(request), _flag(request)
            found = await watched(lambda: service.org_flag(org_id, flag))
        return AnswerResponse(present.org_flag_body(org_id, found))

    async def retention(request: Request) -> Response:
        if request.method == "PUT":
            checks = RequestChecks()
            org = checks.path(request, OrgPath)
            body = await checks.body(request, RetentionBody)
            checks.raise_any()
            assert org is not None and body is not None
            org_id = org.org_id
            found = await watched(
                lambda: service.set_retention(org_id, body.days, actor=_actor(request))
            )
        else:
            org_id = _org(request)
            found = await watched(lambda: service.retention(org_id))
        return AnswerResponse(present.retention_body(found))

    async def erase_events(request: Request) -> Response:
        checks = RequestChecks()
        org = checks.path(request, OrgPath)
        body = await checks.body(request, EraseBody)
        # No rule check after a type error: "event_ids or sender" cannot tell a mistyped
        # field from an absent one (docs/adr/0088).
        checks.raise_any()
        assert org is not None and body is not None
        org_id = org.org_id
        actor = _actor(request)
        report = await watched(
            lambda: service.erase_events(
                org_id, event_ids=body.event_ids, sender=body.sender, actor=actor
            )
        )
        return AnswerResponse(present.erasure_body(report))

    async def erase_org(request: Request) -> Response:
        org_id = _org(request)
        actor = _actor(request)
        report = await watched(lambda: service.erase_org(org_id, actor=actor))
        return AnswerResponse(present.org_erasure_body(report))

    async def purge(request: Request) -> Response:
        body = await parse_body(request, SweepBody, when_empty=SweepBody())
        actor = _actor(request)
        report = await watched(lambda: service.purge(body.org_id, actor=actor))
        return AnswerResponse(present.purge_body(report))

    org = ORG
    return [
        Route("/v1/orgs", list_orgs, methods=["GET"]),
        Route(f"{org}/chat-events", ingest, methods=["POST"]),
        Route(f"{org}/chat-events", erase_events, methods=["DELETE"]),
        Route(org, erase_org, methods=["DELETE"]),
        Route(f"{org}/history/search", search, methods=["GET"]),
        Route("/v1/sweep", sweep, methods=["POST"]),
        Route(f"{org}/sweep", sweep_status, methods=["GET"]),
        Route(f"{org}/search-indexes", search_indexes, methods=["GET"]),
        Route("/v1/feature-flags", list_global_flags, methods=["GET"]),
        Route("/v1/feature-flags/{flag}", global_flag, methods=["GET", "PUT"]),
        Route(f"{org}/feature-flags", list_org_flags, methods=["GET"]),
        Route(f"{org}/feature-flags/{{flag}}", org_flag, methods=["GET", "PUT", "DELETE"]),
        Route(f"{org}/retention", retention, methods=["GET", "PUT"]),
        Route("/v1/purge", purge, methods=["POST"]),
    ]


def _actor(request: Request) -> Actor:
    """Who makes an administrative change: the request's key (audit log)."""
    return actor_of(api_key(request.scope))


def _org(request: Request) -> str:
    return validate(OrgPath, {"org_id": request.path_params["org_id"]}).org_id


def _flag(request: Request) -> str:
    return validate(FlagPath, {"flag": request.path_params["flag"]}).flag


def _global_state(body: GlobalFlagSetBody) -> GlobalState:
    """Exactly one of `enabled` (the on/off of before opt_in) and `state`."""
    if body.state is not None and body.enabled is not None:
        raise InvalidInput("state", "give either state or enabled, not both")
    if body.state is not None:
        return GlobalState(body.state)
    if body.enabled is None:
        raise InvalidInput("state", "required: off, on or opt_in (or give enabled)")
    return GlobalState.of(body.enabled)
