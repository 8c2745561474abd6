"""Operator commands of the policy context (placeholder until the context lands)."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: argparse._SubParsersAction[Any]) -> None:
    pass
