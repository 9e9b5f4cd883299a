"""DuckDB's own parser, as a tree: what a query is, what it reads and calls, and its text
regenerated from the tree.

`json_serialize_sql` gives DuckDB's parse of a text as JSON and serialises SELECT statements
only (DESCRIBE, SUMMARIZE, SHOW, VALUES, PIVOT with listed values and FROM-first queries are
SELECTs to it); `json_deserialize_sql` turns the tree back into SQL. So the parser that
decides what a text means is the engine that will run it, not a look-alike.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import duckdb

from ..errors import QueryError

_local = threading.local()  # a DuckDB connection is not shared between threads
_shared: tuple[int, duckdb.DuckDBPyConnection] | None = None  # (pid, the process's parsing database)
_shared_lock = threading.Lock()


def _parser() -> duckdb.DuckDBPyConnection:
    """This thread's parsing connection: a cursor of one in-memory database per process. The
    service runs each query in a thread of its own (service/gate.py), and a database of its own
    cost each query 10-16 ms; a cursor costs 0.03 ms."""
    if getattr(_local, "con", None) is None:
        _local.con = _new_cursor()
    return _local.con


def _new_cursor() -> duckdb.DuckDBPyConnection:
    global _shared
    with _shared_lock:
        if _shared is None or _shared[0] != os.getpid():  # a forked child opens its own
            _shared = (os.getpid(), duckdb.connect(config={"autoinstall_known_extensions": False,
                                                           "autoload_known_extensions": False}))
        return _shared[1].cursor()


@contextmanager
def parsing_with(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Parse on a connection this thread already has (a new one costs ~10 ms: a query's whole budget)."""
    previous = getattr(_local, "con", None)
    _local.con = con
    try:
        yield
    finally:
        _local.con = previous


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

    def references(self) -> Iterator[tuple[dict[str, Any], frozenset[str]]]:
        """Every node that names a relation (BASE_TABLE; SHOW_REF), with the CTE names in scope where
        it stands, as DuckDB's binder scopes them: a WITH's CTEs are seen by the query that has it and
        by the CTEs after them in the same WITH, and a CTE sees itself only in the recursive part of a
        recursive CTE. Out of scope, a CTE's name is a catalog lookup: in
        `select * from (with pg_settings as (select 1) from pg_settings), pg_settings` the second
        name is DuckDB's pg_settings, so "is it a CTE name?" must be asked where the name stands."""
        stack: list[tuple[Any, frozenset[str]]] = [(s, frozenset()) for s in self.statements]
        while stack:
            item, scope = stack.pop()
            if isinstance(item, list):
                stack.extend((x, scope) for x in item)
            if not isinstance(item, dict):
                continue
            if item.get("type") in ("BASE_TABLE", "SHOW_REF"):
                yield item, scope
            ctes = item["cte_map"].get("map", []) if isinstance(item.get("cte_map"), dict) else []
            names = [str(c["key"]).lower() for c in ctes]
            stack.extend((c["value"], scope | set(names[:i])) for i, c in enumerate(ctes))
            inner = scope | set(names)
            recursive = item.get("type") == "RECURSIVE_CTE_NODE"
            for key, value in item.items():
                if key == "cte_map":
                    continue
                itself = {str(item.get("cte_name", "")).lower()} if recursive and key == "right" else set()
                stack.append((value, inner | itself))

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
        raw = _parser().execute("select json_serialize_sql($1::varchar)", [text]).fetchall()[0][0]
        tree = json.loads(raw)
    except duckdb.Error as e:
        raise QueryError(f"could not read the query: {first_line(e)}") from None
    except RecursionError:
        raise QueryError("could not read the query: nested too deeply") from None
    except Exception as e:  # noqa: BLE001 - whatever the parser or its binding raises is a refusal, never a 500
        raise QueryError(f"could not read the query: {first_line(e)}") from None
    if tree.get("error"):
        message = tree.get("error_message", "")
        if "Only SELECT statements" in message:
            raise NotASelect(message)
        raise QueryError(f"could not read the query: {first_line(message)}")
    return Tree(tree["statements"])


def regenerate(tree: Tree) -> str:
    """SQL text for the tree, written by DuckDB from the tree alone."""
    try:
        text = json.dumps({"error": False, "statements": tree.statements})
        return _parser().execute("select json_deserialize_sql($1::json)", [text]).fetchall()[0][0]
    except Exception as e:  # noqa: BLE001 - DuckDB's errors, a tree too deep for json: a refusal, never a 500
        raise QueryError(f"could not rewrite the query: {first_line(e)}") from None


def statement_kinds(text: str) -> list[tuple[str, str]]:
    """(DuckDB statement type, the statement's own text) for each statement of `text`."""
    try:
        return [(_kind(s), s.query) for s in _parser().extract_statements(text)]
    except duckdb.Error as e:
        raise QueryError(f"could not read the query: {first_line(e)}") from None
    except RecursionError:
        raise QueryError("could not read the query: nested too deeply") from None
    except Exception as e:  # noqa: BLE001 - whatever the parser or its binding raises is a refusal, never a 500
        raise QueryError(f"could not read the query: {first_line(e)}") from None


def _kind(statement: Any) -> str:
    try:
        return statement.type.name
    except ValueError:  # a type the Python binding cannot name (UPDATE EXTENSIONS: 29), which raised
        return "UNKNOWN"


def first_line(error: object, location: bool = True) -> str:
    """DuckDB's messages end in a multi-line picture of the query; users get one line, with
    the line and column the picture points at (`location`: DuckDB draws the picture for some
    ways of running a query and not others, so the engine's errors leave it out)."""
    lines = str(error).strip().splitlines() or [type(error).__name__]
    for i, line in enumerate(lines[:-1] if location else []):
        found = re.match(r"LINE (\d+): ", line)
        if found and "^" in lines[i + 1]:
            column = lines[i + 1].index("^") - len(found.group(0)) + 1
            return f"{lines[0]} (line {found.group(1)}, column {column})"
    return lines[0]


def did_you_mean(message: str, names: list[str]) -> str:
    """' Did you mean ...?' for the unknown table or column a DuckDB error names, or ''."""
    found = re.search(r'(?:Table with name|Referenced column|column named?) "?([A-Za-z_][\w]*)"?', message)
    if not found:
        return ""
    close = difflib.get_close_matches(found.group(1), names, n=3, cutoff=0.6)
    return f" Did you mean {' or '.join(close)}?" if close else ""
