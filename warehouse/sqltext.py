"""Quoting values into SQL text, where DuckDB takes no parameters (view and COPY bodies)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path


def literal(text: str | Path) -> str:
    return "'" + str(text).replace("'", "''") + "'"


def literal_list(texts: Iterable[str | Path]) -> str:
    return "[" + ", ".join(map(literal, texts)) + "]"
