"""DuckDB's own parser, as a tree: what a query is, what it reads and calls, and its text
regenerated from the tree.

`json_serialize_sql` gives DuckDB's parse of a text as JSON and serialises SELECT statements
only (DESCRIBE, SUMMARIZE, SHOW, VALUES, PIVOT with listed values and FROM-first queries are
SELECTs to it); `json_deserialize_sql` turns the tree back into SQL. So the parser that
decides what a text means is the engine that will run it, not a look-alike.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import duckdb

from ..errors import QueryError

_local = threading.local()  # a DuckDB connection is not shared between threads


def _parser() -> duckdb.DuckDBPyConnection:
    if not hasattr(_local, "con"):
        _local.con = duckdb.connect(config={"autoinstall_known_extensions": False,
                                            "autoload_known_extensions": False})
    return _local.con


@dataclass(frozen=True)
class Tree:
    """DuckDB's parse of one or more SELECT statements."""

    statements: list[dict[str, Any]]

    def nodes(self) -> Iterator[dict[str, Any]]:
        """Every object of the tree (iteratively: deeply nested queries must not exhaust the stack)."""
        stack: list[Any] = list(self.statements)
        while stack:
            item = stack.pop()
            if isinstance(item, dict):
                yield item
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)

    def tables(self) -> set[str]:
        """Names in FROM (base tables: views, events_raw, CTEs, or file names for replacement scans)."""
        return {n["table_name"] for n in self.nodes() if n.get("type") == "BASE_TABLE"}

    def qualified_tables(self) -> list[dict[str, Any]]:
        return [n for n in self.nodes() if n.get("type") == "BASE_TABLE"]

    def table_functions(self) -> set[str]:
        return {n["function"]["function_name"].lower() for n in self.nodes()
                if n.get("type") == "TABLE_FUNCTION" and isinstance(n.get("function"), dict)}

    def functions(self) -> set[str]:
        return {n["function_name"].lower() for n in self.nodes() if n.get("class") == "FUNCTION"}

    def cte_names(self) -> set[str]:
        return {entry["key"] for n in self.nodes() if isinstance(n.get("cte_map"), dict)
                for entry in n["cte_map"].get("map", [])}

    def special_shows(self) -> list[dict[str, Any]]:
        """SHOW TABLES / SHOW ALL TABLES: nodes the regenerator cannot spell (it writes DESCRIBE "tables")."""
        return [n for n in self.nodes() if n.get("type") == "SHOW_REF" and n.get("show_type") == "SHOW_SPECIAL"]


class NotASelect(QueryError):
    """DuckDB parsed the text, but as something other than SELECT statements."""


def parse(text: str) -> Tree:
    """DuckDB's tree of `text`; NotASelect for statements that are not SELECTs, QueryError when
    DuckDB cannot parse it at all."""
    try:
        raw = _parser().execute("select json_serialize_sql($1::varchar)", [text]).fetchone()[0]
        tree = json.loads(raw)
    except duckdb.Error as e:
        raise QueryError(f"could not read the query: {first_line(e)}") from None
    except RecursionError:
        raise QueryError("could not read the query: nested too deeply") from None
    if tree.get("error"):
        message = tree.get("error_message", "")
        if "Only SELECT statements" in message:
            raise NotASelect(message)
        raise QueryError(f"could not read the query: {first_line(message)}")
    return Tree(tree["statements"])


def regenerate(tree: Tree) -> str:
    """SQL text for the tree, written by DuckDB from the tree alone."""
    text = json.dumps({"error": False, "statements": tree.statements})
    try:
        return _parser().execute("select json_deserialize_sql($1::json)", [text]).fetchone()[0]
    except duckdb.Error as e:
        raise QueryError(f"could not rewrite the query: {first_line(e)}") from None


def statement_kinds(text: str) -> list[tuple[str, str]]:
    """(DuckDB statement type, the statement's own text) for each statement of `text`."""
    try:
        return [(s.type.name, s.query) for s in _parser().extract_statements(text)]
    except duckdb.Error as e:
        raise QueryError(f"could not read the query: {first_line(e)}") from None
    except RecursionError:
        raise QueryError("could not read the query: nested too deeply") from None


def first_line(error: object) -> str:
    """DuckDB's messages end in a multi-line picture of the query; users get one line, with
    the line and column the picture points at."""
    lines = str(error).strip().splitlines() or [type(error).__name__]
    for i, line in enumerate(lines[:-1]):
        found = re.match(r"LINE (\d+): ", line)
        if found and "^" in lines[i + 1]:
            column = lines[i + 1].index("^") - len(found.group(0)) + 1
            return f"{lines[0]} (line {found.group(1)}, column {column})"
    return lines[0]
