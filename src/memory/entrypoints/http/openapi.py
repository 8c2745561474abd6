"""The machine-readable contract: `GET /openapi.json` (OpenAPI 3.1), generated from the
request and response models of `memory.contract` and `OPERATIONS` below (every route with
its statuses and error codes); `GET /docs`, Swagger UI served from the `swagger-ui-py`
package's files (no CDN: deployments are often offline).

A test checks that `OPERATIONS` and the app's routes are the same set, so a route cannot
be added without its contract.
"""

from __future__ import annotations

import copy
import functools
import importlib.resources
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Route

from memory.contract import access_requests as a
from memory.contract import history_requests as h
from memory.contract import policy_requests as p
from memory.contract import responses as s
from memory.contract.descriptions import describe
from memory.contract.examples import OperationExample, operation_examples
from memory.contract.input import COMPONENT_KEY

OPENAPI_VERSION = "3.1.0"
REF = "#/components/schemas/{model}"

# Error codes by status, as `memory.entrypoints.http.errors` maps them.
INVALID = {422: ["validation_error"]}
NOT_FOUND = {404: ["not_found"]}
DATABASE = {503: ["database_unavailable"]}
# Every /v1 route whose database stopped answering (docs/adr/0082).
STALLED = {504: ["timeout"]}
EMBEDDING = {
    422: ["validation_error", "input_rejected"],
    503: ["database_unavailable", "model_unavailable", "model_misconfigured"],
}


@dataclass(frozen=True)
class Operation:
    """One route of the contract. `answers`: success status -> body model (None: no body);
    `errors`: status -> the error codes it may carry."""

    method: str
    path: str
    operation_id: str
    summary: str
    tag: str
    answers: Mapping[int, type[BaseModel] | None]
    path_model: type[BaseModel] | None = None
    query: type[BaseModel] | None = None
    body: type[BaseModel] | None = None
    body_optional: bool = False
    errors: Mapping[int, Sequence[str]] = field(default_factory=dict)


# Every /v1 route: the access middleware's answers (docs/security.md) and the body limit.
ACCESS_ERRORS = {
    401: ["unauthenticated", "key_expired"],
    403: ["forbidden"],
    413: ["payload_too_large"],
    429: ["rate_limited"],
}


def _errors(*groups: Mapping[int, Sequence[str]]) -> dict[int, list[str]]:
    merged: dict[int, list[str]] = {}
    for group in (*groups, DATABASE, STALLED, ACCESS_ERRORS):
        for status, codes in group.items():
            merged.setdefault(status, [])
            merged[status] += [c for c in codes if c not in merged[status]]
    return merged


ORG = "/v1/orgs/{org_id}"
ORG_FLAG = "/v1/orgs/{org_id}/feature-flags/{flag}"
CONFLICT = {409: ["conflict"]}
TIMEOUT = {504: ["timeout"]}
# Each path's parameters, found by their names (`_path_model`).
PATH_MODELS: tuple[type[BaseModel], ...] = (
    p.PolicyPath,
    p.EmbeddingPath,
    h.OrgPath,
    h.FlagPath,
    h.OrgFlagPath,
    a.KeyPath,
)


def _path_model(path: str) -> type[BaseModel] | None:
    names = set(re.findall(r"{(\w+)}", path))
    if not names:
        return None
    found = [m for m in PATH_MODELS if set(m.model_fields) == names]
    if len(found) != 1:
        raise LookupError(f"{path}: no one model in PATH_MODELS has exactly {sorted(names)}")
    return found[0]


def _v1(
    tag: str,
    route: str,
    operation_id: str,
    summary: str,
    answer: type[BaseModel] | None,
    *,
    status: int = 200,
    query: type[BaseModel] | None = None,
    body: type[BaseModel] | None = None,
    body_optional: bool = False,
    errors: Sequence[Mapping[int, Sequence[str]]] = (),
    any_key: bool = False,
) -> Operation:
    """A `/v1` operation; `route` is "METHOD /path". Any input (path, query or body) may be
    refused with 422 `validation_error`; every operation may meet the database's and the
    access middleware's errors (`_errors`), except 403 for one that any valid key may call
    (`any_key`, `Access.key_holder`)."""
    method, path = route.split(" ", 1)
    path_model = _path_model(path)
    takes_input = any(m is not None for m in (path_model, query, body))
    merged = _errors(*([INVALID] if takes_input else []), *errors)
    if any_key:
        del merged[403]
    return Operation(
        method,
        path,
        operation_id,
        summary,
        tag,
        {status: answer},
        path_model=path_model,
        query=query,
        body=body,
        body_optional=body_optional,
        errors=merged,
    )


_policies = functools.partial(_v1, "policies")
_history = functools.partial(_v1, "history")
_flags = functools.partial(_v1, "flags")
_access = functools.partial(_v1, "access")

# One operation to a few lines, read as a table.
# fmt: off
OPERATIONS: tuple[Operation, ...] = (
    # Policy memory
    _policies(
        "POST /v1/policies", "storePolicy", "Store a new policy", s.StoreReceiptBody,
        status=201, query=p.NamespaceQuery, body=p.StoreBody, errors=[EMBEDDING, CONFLICT],
    ),
    _policies(
        "GET /v1/policies", "listPolicies", "List policies, newest first", s.PolicyPageBody,
        query=p.PolicyListing,
    ),
    _policies(
        "GET /v1/policies/{policy_id}", "getPolicy", "A policy's current version",
        s.StoredPolicyBody, query=p.NamespaceQuery, errors=[NOT_FOUND],
    ),
    _policies(
        "PUT /v1/policies/{policy_id}", "updatePolicy", "Record a new version",
        s.StoreReceiptBody, query=p.NamespaceQuery, body=p.UpdateBody,
        errors=[EMBEDDING, NOT_FOUND, CONFLICT],
    ),
    _policies(
        "DELETE /v1/policies/{policy_id}", "deletePolicy", "Delete a policy", None,
        status=204, query=p.NamespaceQuery, errors=[NOT_FOUND, CONFLICT],
    ),
    _policies(
        "GET /v1/policies/{policy_id}/versions", "policyVersions", "A policy's version history",
        s.PolicyVersionsBody, query=p.NamespaceQuery, errors=[NOT_FOUND],
    ),
    _policies(
        "POST /v1/policies/search", "searchPolicies", "Semantic search of policies",
        s.PolicySearchBody, query=p.NamespaceQuery, body=p.SearchBody,
        errors=[EMBEDDING, TIMEOUT],
    ),
    _policies(
        "GET /v1/embeddings/{embedding_ref}", "getPolicyByEmbedding",
        "The policy behind an embedding reference", s.PolicyDocumentBody,
        query=p.EmbeddingLookup, errors=[EMBEDDING, NOT_FOUND, TIMEOUT],
    ),
    # History search
    _history(
        "GET /v1/orgs", "listOrgs",
        "Every org the service knows, with its summary (a key for one org sees that org)",
        s.OrgDirectoryBody, query=h.OrgListingParams,
    ),
    _history(
        f"POST {ORG}/chat-events", "ingestChatEvents", "Ingest chat events", s.IngestReceiptBody,
        status=201, body=h.IngestBody,
    ),
    _history(
        f"DELETE {ORG}/chat-events", "eraseChatEvents",
        "Erase events by id or by sender, and the windows covering them", s.ErasureBody,
        body=h.EraseBody,
    ),
    _history(f"DELETE {ORG}", "eraseOrg", "Erase everything an org has", s.OrgErasureBody),
    _history(
        f"GET {ORG}/history/search", "searchHistory", "Hybrid search of chat history",
        s.HistorySearchBody, query=h.SearchParams,
    ),
    _history(
        "POST /v1/sweep", "runSweep", "Run one sweep pass now", s.SweepReportBody,
        body=h.SweepBody, body_optional=True,
    ),
    _history(
        f"GET {ORG}/sweep", "sweepStatus",
        "Sweep progress: the org's totals and a keyset page of its partitions",
        s.SweepStatusBody, query=h.SweepStatusParams,
    ),
    _history(
        f"GET {ORG}/search-indexes", "searchIndexes",
        "The org's search indexes: wanted, building (with progress), ready, failed, dropping",
        s.OrgSearchIndexesBody,
    ),
    _flags("GET /v1/feature-flags", "listGlobalFlags", "Global feature flags", s.GlobalFlagsBody),
    _flags(
        "GET /v1/feature-flags/{flag}", "getGlobalFlag", "One global flag", s.GlobalFlagBody,
        errors=[NOT_FOUND],
    ),
    _flags(
        "PUT /v1/feature-flags/{flag}", "setGlobalFlag", "Set a global flag", s.GlobalFlagBody,
        body=h.GlobalFlagSetBody, errors=[NOT_FOUND],
    ),
    _flags(f"GET {ORG}/feature-flags", "listOrgFlags", "An org's flags", s.OrgFlagsBody),
    _flags(
        f"GET {ORG_FLAG}", "getOrgFlag", "One flag of an org", s.OrgFlagBody, errors=[NOT_FOUND]
    ),
    _flags(
        f"PUT {ORG_FLAG}", "setOrgFlag", "Override a flag for an org", s.OrgFlagBody,
        body=h.FlagBody, errors=[NOT_FOUND],
    ),
    _flags(
        f"DELETE {ORG_FLAG}", "clearOrgFlag", "Remove an org's override", s.OrgFlagBody,
        errors=[NOT_FOUND],
    ),
    _history(
        "GET /v1/activity", "serviceActivity",
        "The last hour a minute at a time: searches, degraded share, sweep lag and throughput",
        s.ActivityBody,
    ),
    _history(
        f"GET {ORG}/activity", "orgActivity",
        "An org's last hour a minute at a time: searches, degraded share, sweep lag and"
        " throughput",
        s.ActivityBody,
    ),
    _history(f"GET {ORG}/retention", "getRetention", "An org's retention", s.RetentionBodyOut),
    _history(
        f"PUT {ORG}/retention", "setRetention", "Set an org's retention", s.RetentionBodyOut,
        body=h.RetentionBody,
    ),
    _history(
        "POST /v1/purge", "runPurge", "Run the retention purge now", s.PurgeBody,
        body=h.SweepBody, body_optional=True,
    ),
    # Access
    _access(
        "POST /v1/api-keys", "createApiKey", "Create an API key", s.NewApiKeyBody,
        status=201, body=a.NewKeyBody,
    ),
    _access(
        "GET /v1/api-keys", "listApiKeys", "API keys the caller may see", s.ApiKeysBody,
        query=a.KeysParams,
    ),
    _access(
        "GET /v1/api-keys/self", "getOwnApiKey",
        "The caller's own key: id, name, org, scopes, expiry, the operations it may call",
        s.OwnApiKeyBody, any_key=True,
    ),
    # 409: `admin-token` names MEMORY_ADMIN_TOKEN, which is configuration, not a key.
    _access(
        "DELETE /v1/api-keys/{key_id}", "revokeApiKey", "Revoke an API key", None,
        status=204, errors=[NOT_FOUND, CONFLICT],
    ),
    _access(
        "GET /v1/audit", "auditLog", "Admin actions, newest first", s.AuditPageBody,
        query=a.AuditParams,
    ),
    # Service
    Operation(
        "GET",
        "/healthz",
        "health",
        "Health of the database and each context",
        "service",
        {200: s.HealthBody},
        errors={503: ["unavailable"]},
    ),
)
# fmt: on
# OpenAPI links: which answers feed which next requests (what a client does after a call, and
# the paths the contract fuzzer's stateful phase follows). source -> (target, parameters,
# request body or None); values are OpenAPI runtime expressions. Every operation is the
# target or the source of a link, and every chain starts at an operation the fuzzer calls
# first (a POST, or a GET without path parameters), so its stateful phase reaches every
# operation (docs/adr/0123; tests/e2e/contract asserts it).
_POLICY = {"policy_id": "$response.body#/policy_id"}
_SAME_ORG = {"org_id": "$request.path.org_id"}
_SAME_ORG_FLAG = {"org_id": "$request.path.org_id", "flag": "$request.path.flag"}
_ORG_IN_BODY = {"org_id": "$request.path.org_id"}
_LISTED_FLAG = {"flag": "$response.body#/flags/0/flag"}
_LISTED_ORG = {"org_id": "$response.body#/orgs/0/org_id"}
LINKS: Mapping[str, Sequence[tuple[str, Mapping[str, str], Any]]] = {
    "storePolicy": [
        ("getPolicy", _POLICY, None),
        ("updatePolicy", _POLICY, None),
        ("policyVersions", _POLICY, None),
        ("deletePolicy", _POLICY, None),
        ("getPolicyByEmbedding", {"embedding_ref": "$response.body#/embedding_ref"}, None),
        ("searchPolicies", {}, {"query": "$request.body#/content"}),
        ("listPolicies", {}, None),
    ],
    "updatePolicy": [
        ("getPolicy", _POLICY, None),
        ("policyVersions", _POLICY, None),
        ("deletePolicy", _POLICY, None),
    ],
    "ingestChatEvents": [
        ("searchHistory", _SAME_ORG, None),
        ("sweepStatus", _SAME_ORG, None),
        ("searchIndexes", _SAME_ORG, None),
        ("eraseChatEvents", _SAME_ORG, {"event_ids": "$response.body#/event_ids"}),
        ("listOrgFlags", _SAME_ORG, None),
        ("setOrgFlag", _SAME_ORG, None),
        ("getRetention", _SAME_ORG, None),
        ("setRetention", _SAME_ORG, None),
        ("orgActivity", _SAME_ORG, None),
        ("listOrgs", {"prefix": "$request.path.org_id"}, None),
        ("runSweep", {}, _ORG_IN_BODY),
        ("runPurge", {}, _ORG_IN_BODY),
        ("eraseOrg", _SAME_ORG, None),
    ],
    # The directory leads to what can be done to an org it lists (or, empty, to any org).
    "listOrgs": [
        ("ingestChatEvents", _LISTED_ORG, None),
        ("createApiKey", {}, None),
        ("runSweep", {}, None),
        ("runPurge", {}, None),
    ],
    "runSweep": [("serviceActivity", {}, None), ("health", {}, None)],
    "setOrgFlag": [("getOrgFlag", _SAME_ORG_FLAG, None), ("clearOrgFlag", _SAME_ORG_FLAG, None)],
    "listGlobalFlags": [
        ("getGlobalFlag", _LISTED_FLAG, None),
        ("setGlobalFlag", _LISTED_FLAG, None),
    ],
    "setGlobalFlag": [("getGlobalFlag", {"flag": "$request.path.flag"}, None)],
    "setRetention": [("getRetention", _SAME_ORG, None)],
    "createApiKey": [
        ("revokeApiKey", {"key_id": "$response.body#/key_id"}, None),
        ("listApiKeys", {}, None),
        ("getOwnApiKey", {}, None),
        ("auditLog", {}, None),
    ],
}


def _links(operation_id: str) -> dict[str, Any]:
    links: dict[str, Any] = {}
    for target, parameters, body in LINKS.get(operation_id, ()):
        link: dict[str, Any] = {"operationId": target, "parameters": dict(parameters)}
        if body is not None:
            link["requestBody"] = body
        links[target] = link
    return links


# Served as they are, outside the JSON contract.
UNDOCUMENTED = frozenset(
    {
        ("GET", "/metrics"),
        ("GET", "/openapi.json"),
        ("GET", "/docs"),
        ("GET", "/docs/{asset}"),
        ("GET", "/console"),
        ("GET", "/console/{file}"),
    }
)
EXTRA_SCHEMAS: tuple[type[BaseModel], ...] = (
    s.ErrorBody,
    s.PolicyMetadataShape,
    s.PolicyFilterShape,
)


@functools.cache
def openapi_document() -> dict[str, Any]:
    models = _models()
    _, components = models_json_schema(
        [(m, "validation" if _is_request(m) else "serialization") for m in models],
        ref_template=REF,
    )
    schemas = {name: _components(schema) for name, schema in components["$defs"].items()}
    schemas["PolicyMetadataValue"] = copy.deepcopy(s.METADATA_VALUE_SCHEMA)
    for name, schema in schemas.items():
        _describe_properties(name, schema)
    paths: dict[str, dict[str, Any]] = {}
    for op in OPERATIONS:
        paths.setdefault(op.path, {})[op.method.lower()] = _operation(op, schemas)
    document = {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": "memory",
            "version": _version(),
            "description": "Policy memory and history search. Errors are "
            '`{"error": {"code", "message", "details"?}}`; `x-error-codes` lists the codes '
            "each status may carry.",
        },
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"apiKey": {"type": "http", "scheme": "bearer"}},
        },
    }
    _number_bounds(document)
    return document


# pydantic writes the bounds of a number behind a validator (`QueryInt`, `QueryNumber`) under
# its own names, which JSON Schema does not know: readers and the fuzzer would ignore them.
_BOUNDS = {"ge": "minimum", "le": "maximum", "gt": "exclusiveMinimum", "lt": "exclusiveMaximum"}


def _number_bounds(node: Any) -> None:
    if isinstance(node, dict):
        if node.get("type") in ("integer", "number"):
            for ours, standard in _BOUNDS.items():
                if ours in node:
                    node[standard] = node.pop(ours)
        for value in node.values():
            _number_bounds(value)
    elif isinstance(node, list):
        for value in node:
            _number_bounds(value)


def _models() -> list[type[BaseModel]]:
    seen: dict[type[BaseModel], None] = {}
    for op in OPERATIONS:
        for m in (op.body, *op.answers.values()):
            if m is not None:
                seen[m] = None
    for m in EXTRA_SCHEMAS:
        seen[m] = None
    return list(seen)


def _is_request(model: type[BaseModel]) -> bool:
    return any(model is op.body for op in OPERATIONS)


def _components(schema: Any) -> Any:
    """Replace the marked fields (`contract.input.nullable_ref`) by a reference to their shape."""
    if isinstance(schema, dict):
        if COMPONENT_KEY in schema:
            ref = {"$ref": REF.format(model=schema[COMPONENT_KEY])}
            return {"anyOf": [ref, {"type": "null"}], "default": None}
        return {k: _components(v) for k, v in schema.items()}
    if isinstance(schema, list):
        return [_components(v) for v in schema]
    return schema


def _describe_properties(model: str, schema: dict[str, Any]) -> None:
    """Each property without a description of its own gets the glossary's."""
    for name, prop in schema.get("properties", {}).items():
        if "description" not in prop:
            text = describe(model, name)
            if text is not None:
                prop["description"] = text


def _ref(model: type[BaseModel]) -> dict[str, str]:
    return {"$ref": REF.format(model=model.__name__)}


def _json(model: type[BaseModel], example: Any = None) -> dict[str, Any]:
    """A `content` of JSON in `model`'s shape, with an example when there is one."""
    content: dict[str, Any] = {"schema": _ref(model)}
    if example is not None:
        content["example"] = example
    return {"application/json": content}


def _parameters(
    model: type[BaseModel] | None, where: str, operation_id: str, examples: dict[str, Any]
) -> list[dict[str, Any]]:
    if model is None:
        return []
    schema = model.model_json_schema(ref_template=REF)
    required = set(schema.get("required", []))
    parameters = []
    for name, prop in schema["properties"].items():
        prop = {k: v for k, v in prop.items() if k not in ("title", "description")}
        description = schema["properties"][name].get("description") or describe(operation_id, name)
        parameter: dict[str, Any] = {
            "name": name,
            "in": where,
            "required": where == "path" or name in required,
            "schema": prop,
        }
        if description is not None:
            parameter["description"] = description
        if name in examples:
            parameter["example"] = examples[name]
        parameters.append(parameter)
    return parameters


def _operation(op: Operation, schemas: dict[str, Any]) -> dict[str, Any]:
    example = operation_examples().get(op.operation_id, OperationExample(status=0))
    out: dict[str, Any] = {
        "security": [{"apiKey": []}] if op.path.startswith("/v1/") else [],
        "operationId": op.operation_id,
        "summary": op.summary,
        "tags": [op.tag],
        "parameters": _parameters(op.path_model, "path", op.operation_id, example.path)
        + _parameters(op.query, "query", op.operation_id, example.query),
    }
    if op.body is not None:
        out["requestBody"] = {
            "required": not op.body_optional,
            "content": _json(op.body, example.body),
        }
    responses: dict[str, Any] = {}
    for status, model in op.answers.items():
        responses[str(status)] = (
            {"description": "No content"}
            if model is None
            else {
                "description": "Success",
                "content": _json(model, example.answer if example.status == status else None),
            }
        )
        links = _links(op.operation_id)
        if links:
            responses[str(status)]["links"] = links
    for status, codes in sorted(op.errors.items()):
        responses[str(status)] = {
            "description": "Error: " + ", ".join(f"`{c}`" for c in codes),
            "content": _json(s.ErrorBody),
            "x-error-codes": list(codes),
        }
    out["responses"] = responses
    return out


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("memory")
    except PackageNotFoundError:
        return "0"


@functools.cache
def _swagger_dir() -> Path:
    return Path(str(importlib.resources.files("swagger_ui") / "static"))


# Only these files of the package are served.
DOCS_ASSETS = {
    "swagger-ui.css": "text/css",
    "swagger-ui-bundle.js": "text/javascript",
    "favicon-32x32.png": "image/png",
}
_DOCS_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>memory API</title>
<link rel="stylesheet" href="/docs/swagger-ui.css">
<link rel="icon" type="image/png" href="/docs/favicon-32x32.png"></head>
<body><div id="swagger-ui"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script>window.ui = SwaggerUIBundle({url: "/openapi.json", dom_id: "#swagger-ui"});</script>
</body></html>
"""


def contract_routes() -> list[BaseRoute]:
    async def document(request: Request) -> Response:
        return JSONResponse(openapi_document())

    async def docs(request: Request) -> Response:
        return HTMLResponse(_DOCS_PAGE)

    async def asset(request: Request) -> Response:
        name = request.path_params["asset"]
        media_type = DOCS_ASSETS.get(name)
        if media_type is None:
            return JSONResponse(
                {"error": {"code": "not_found", "message": f"no asset {name!r}"}}, 404
            )
        return FileResponse(_swagger_dir() / name, media_type=media_type)

    return [
        Route("/openapi.json", document, methods=["GET"]),
        Route("/docs", docs, methods=["GET"]),
        Route("/docs/{asset}", asset, methods=["GET"]),
    ]


def dumps() -> str:
    """The document as `memory openapi` prints it."""
    return json.dumps(openapi_document(), indent=2, sort_keys=False)
