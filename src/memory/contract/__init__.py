"""The published language of the HTTP API (docs/adr/0075-contract-package.md): the request
and response models both sides of the wire share, and the pure rules they need.

The server (`memory.entrypoints.http`) parses requests into these models and the OpenAPI
document is generated from them; `memory.client` builds its requests from the same models and
parses answers into them. Nothing here does I/O or imports a web framework or a database
driver, so that a client installs and imports none of them.
"""
