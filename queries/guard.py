"""Every query a user types goes through here: parsed by sqlglot, refused unless read-only.

`prepare_query(sql, dialect)` transpiles from another dialect to DuckDB and checks the
statement kinds; with `service=True` it also refuses file and network access (table
functions that read files, quoted file names in FROM, URLs), since the service runs on
someone else's machine.
"""

from __future__ import annotations

import difflib
import re

import sqlglot
from sqlglot import exp

from ..errors import QueryError
from .registry import SOURCE_RELATIONS, load_views

READ_ONLY = (exp.Select, exp.SetOperation, exp.Values, exp.Describe, exp.Show, exp.Summarize, exp.Pivot)
ALLOWED_TEXT = "SELECT / WITH / VALUES / DESCRIBE / SHOW / SUMMARIZE / PIVOT / EXPLAIN"
FILE_FUNCTIONS = frozenset({
    "read_csv", "read_csv_auto", "read_parquet", "parquet_scan", "read_json", "read_json_auto", "read_json_objects",
    "read_json_objects_auto", "read_ndjson", "read_ndjson_auto", "read_ndjson_objects", "read_text", "read_blob",
    "glob", "sniff_csv", "parquet_metadata", "parquet_schema", "parquet_file_metadata", "parquet_kv_metadata",
    "parquet_bloom_probe", "delta_scan", "iceberg_scan", "iceberg_metadata", "read_xlsx", "sqlite_scan",
    "sqlite_attach", "postgres_scan", "mysql_scan", "query_table", "read_csv_auto", "load_aws_credentials",
})
URL = re.compile(r"^\s*(https?|s3a?|gcs?|gs|az|abfss?|hf|r2|file)://", re.I)


def _statement_name(statement: exp.Expression) -> str:
    if isinstance(statement, exp.Command):
        return str(statement.this).upper()
    return re.sub(r"(?<!^)(?=[A-Z])", " ", type(statement).__name__).upper()


def _parse(sql: str, dialect: str) -> list[exp.Expression]:
    try:
        return [s for s in sqlglot.parse(sql, read=dialect) if s is not None]
    except sqlglot.errors.ParseError as e:
        first = e.errors[0] if e.errors else {}
        where = f"line {first.get('line')}, column {first.get('col')}, near {first.get('highlight')!r}: " if first else ""
        raise QueryError(f"could not read the query as {dialect} SQL: {where}{first.get('description', e)}") from None


def _check_statement(statement: exp.Expression, dialect: str) -> None:
    if isinstance(statement, READ_ONLY):
        return
    if isinstance(statement, exp.Command) and str(statement.this).upper() == "EXPLAIN":
        inner = re.sub(r"^\s*analyze\s+", "", statement.expression.name if statement.expression else "", flags=re.I)
        for s in _parse(inner, dialect) if inner else []:
            _check_statement(s, dialect)
        return
    raise QueryError(f"{_statement_name(statement)} refused: tracewh runs read-only statements only "
                     f"({ALLOWED_TEXT}); the store changes only through `tracewh ingest`")


def _check_no_external_access(statement: exp.Expression) -> None:
    # DuckDB reads any unknown table name that looks like a file ("replacement scans"), so
    # only the store's relations and the query's own CTEs may appear as tables.
    known = {v.name for v in load_views()} | SOURCE_RELATIONS | {c.alias_or_name for c in statement.find_all(exp.CTE)}
    for node in statement.walk():
        name = ""
        if isinstance(node, exp.Func):
            name = (node.name if isinstance(node, exp.Anonymous) else node.sql_name()).lower()
        if name in FILE_FUNCTIONS:
            raise QueryError(f"{name}() refused: the service does not read files or the network")
        if isinstance(node, exp.Table) and isinstance(node.this, (exp.Identifier, exp.Literal)) and node.name not in known:
            raise QueryError(f"reading {node.name!r} refused: the service queries the store's views only")
        if isinstance(node, exp.Literal) and node.is_string and URL.match(str(node.this)):
            raise QueryError(f"{node.this!r} refused: the service does not reach the network")


def prepare_query(sql: str, dialect: str = "duckdb", service: bool = False) -> str:
    """DuckDB SQL for `sql` written in `dialect`; QueryError unless it only reads."""
    statements = _parse(sql, dialect)
    if not statements:
        raise QueryError("the query is empty")
    for statement in statements:
        _check_statement(statement, dialect)
        if service:
            _check_no_external_access(statement)
    if dialect == "duckdb":
        return sql
    return ";\n".join(s.sql(dialect="duckdb") for s in statements)


def did_you_mean(message: str, names: list[str]) -> str:
    """' Did you mean ...?' for the unknown table or column a DuckDB error names, or ''."""
    found = re.search(r'(?:Table with name|Referenced column|column named?) "?([A-Za-z_][\w]*)"?', message)
    if not found:
        return ""
    close = difflib.get_close_matches(found.group(1), names, n=3, cutoff=0.6)
    return f" Did you mean {' or '.join(close)}?" if close else ""
