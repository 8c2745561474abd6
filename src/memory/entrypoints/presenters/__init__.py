"""Presenters: domain results -> `memory.contract` answer models, one module per context.

The HTTP routes answer with these models, the CLI's `--json` prints them through `wire`, and
the client parses the same models (docs/adr/0087), so every door shows a result alike. No
door imports another door: a route module and a CLI module both import from here.
"""
