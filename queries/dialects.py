"""The views in another engine's SQL: sqlglot transpiles each DuckDB view file.

sqlglot translates functions and syntax, but a few DuckDB idioms the views rely on mean
something different, or nothing, elsewhere; for Spark (and Databricks, which reads Spark
SQL) they are rewritten on the syntax tree before sqlglot writes the SQL:

- a JSON path with a `[*]` wildcard returns a *list* in DuckDB; Spark's GET_JSON_OBJECT
  returns JSON text (and unwraps one-element matches), so the array is parsed with
  FROM_JSON and the rest of the path applied to each element;
- `from_json(x, '["VARCHAR"]')` / `'["JSON"]'` (DuckDB's structure syntax) becomes
  FROM_JSON with an ARRAY<STRING> schema (JSON elements stay JSON text, as in DuckDB);
- `x::JSON`: JSON is text in Spark, so the cast is dropped;
- a literal like `100.0` is DOUBLE: Spark would keep DECIMAL arithmetic and round each
  quotient to 6 places, where DuckDB divides in DOUBLE;
- `list_intersect` is ARRAY_INTERSECT;
- `WITH x AS MATERIALIZED (...)` (DuckDB computes the CTE once instead of in each step of a
  recursive walk) has no such hint in Spark: the hint is dropped;
- `quantile_cont(x, q)` is exact; sqlglot writes Spark's PERCENTILE_APPROX, so it becomes
  PERCENTILE (exact, interpolated);
- DuckDB's ANY_VALUE skips NULLs: ANY_VALUE(x, TRUE) in Spark (sqlglot's `IGNORE NULLS`
  does not parse there before a FILTER clause);
- `list_reduce(list(p ORDER BY k), lambda a, b: json_merge_patch(a, b))` (later objects
  win on a key) becomes a fold over the ordered objects as MAP<STRING, VARIANT>. Spark has
  no JSON merge, so this merges top-level keys only, which is what run attributes are.

docs/scale-out.md lists what is tested on which engine.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from ..errors import QueryError
from ..schema import COLUMN_NAMES
from .registry import load_views

SPARK_DIALECTS = frozenset({"spark", "databricks"})

# The JSON schema of DuckDB's from_json structures for lists of text or of JSON values.
LIST_STRUCTURES = frozenset({'["VARCHAR"]', '["JSON"]'})

# Later objects win on a top-level key; `patch` keys replace `merged` ones. `{objects}` is
# the ordered array of JSON texts.
SPARK_MERGE = """
TO_JSON(AGGREGATE(
    TRANSFORM({objects}, o -> FROM_JSON(o, 'MAP<STRING, VARIANT>')),
    CAST(MAP() AS MAP<STRING, VARIANT>),
    (merged, patch) -> MAP_CONCAT(MAP_FILTER(merged, (k, v) -> NOT ARRAY_CONTAINS(MAP_KEYS(patch), k)), patch)
))"""


def view_script(dialect: str, events_dir: str, version: str) -> str:
    """Every view as `dialect` SQL in dependency order, after the definition of `events_raw`:
    a script to run on that engine (`tracewh views --sql --dialect ...`)."""
    source = events_raw_statements(dialect, events_dir)
    if not source:
        note = "-- First define `events_raw` over those files (a Delta table partitioned by benchmark, kind).\n"
    elif dialect == "databricks":
        note = ""  # reads the Delta log: only committed files
    else:
        note = "-- This reads every Parquet file there: run `tracewh doctor` first to remove interrupted writes.\n"
    parts = [f"-- tracewh {version} views for {dialect}, in dependency order, over the store at {events_dir}.\n{note}"]
    parts += [f"{statement};\n" for statement in source]
    parts += [f"-- {view.name}: {view.description}\n{transpile_view(view.sql, dialect)};\n" for view in load_views()]
    return "\n".join(parts)


def events_raw_statements(dialect: str, events_dir: str) -> list[str]:
    """Statements that define `events_raw` over the store's files (WAREHOUSE/events) in
    `dialect`, or [] where the engine needs a catalog tracewh cannot name (Trino, ...).

    Columns are listed so `SELECT *` views keep the contract's order (readers put
    partition columns last). Spark reads the Parquet files and must not guess partition
    types (a benchmark named `2024` stays text); Databricks reads the Delta table."""
    columns = ", ".join(COLUMN_NAMES)
    path = events_dir.replace("`", "``")
    if dialect == "spark":
        return ["SET spark.sql.sources.partitionColumnTypeInference.enabled = false",
                f"CREATE OR REPLACE VIEW events_raw AS SELECT {columns} FROM parquet.`{path}`"]
    if dialect == "databricks":
        return [f"CREATE OR REPLACE VIEW events_raw AS SELECT {columns} FROM delta.`{path}`"]
    if dialect == "duckdb":
        glob = exp.Literal.string(f"{events_dir}/**/*.parquet").sql("duckdb")
        return [f"CREATE OR REPLACE VIEW events_raw AS SELECT {columns} FROM read_parquet({glob}, "
                "hive_partitioning = true, hive_types_autocast = false, union_by_name = true)"]
    return []


def transpile_view(sql: str, dialect: str, pretty: bool = True) -> str:
    """A view definition (DuckDB) in another dialect; DuckDB gets the file as written."""
    if dialect == "duckdb":
        return sql.strip().rstrip(";")
    statements = sqlglot.parse(sql, read="duckdb")
    if dialect in SPARK_DIALECTS:
        statements = [_bottom_up(s, _for_spark) for s in statements if s is not None]
    return ";\n".join(s.sql(dialect=dialect, pretty=pretty) for s in statements if s is not None)


def _bottom_up(tree: exp.Expression, rewrite) -> exp.Expression:
    """`rewrite` applied to every node, children first, so a rewritten node's parts are
    already rewritten (sqlglot's `transform` goes top-down and skips what it replaced)."""
    tree = tree.copy()
    for node in reversed(list(tree.walk(bfs=False))):
        new = rewrite(node)
        if new is not node:
            node.replace(new)
    return tree


def _for_spark(node: exp.Expression) -> exp.Expression:
    if isinstance(node, (exp.JSONExtract, exp.JSONExtractScalar)) and _wildcard_at(node.expression) is not None:
        return _json_list(node)
    if isinstance(node, exp.FromJson) and node.expression.is_string and node.expression.name in LIST_STRUCTURES:
        return _fn("FROM_JSON", node.this, exp.Literal.string("ARRAY<STRING>"))
    if isinstance(node, exp.Literal) and node.is_number and "." in node.name:
        return exp.cast(node, exp.DataType.Type.DOUBLE)
    if isinstance(node, exp.Cast) and node.to.is_type(exp.DataType.Type.JSON):
        return node.this
    if isinstance(node, exp.IgnoreNulls) and isinstance(node.this, exp.AnyValue):
        return _fn("ANY_VALUE", node.this.this, exp.true())
    if isinstance(node, exp.PercentileCont) and not isinstance(node.parent, exp.WithinGroup):
        return _fn("PERCENTILE", node.this, node.expression)
    if isinstance(node, exp.CTE) and node.args.get("materialized") is not None:
        node.set("materialized", None)
        return node
    if isinstance(node, exp.Anonymous) and node.name.lower() == "list_intersect":
        return _fn("ARRAY_INTERSECT", *node.expressions)
    if isinstance(node, exp.Anonymous) and node.name.lower() == "list_reduce" and _is_json_merge(node):
        return _spark_merge(node.expressions[0])
    return node


def _wildcard_at(path: exp.Expression) -> int | None:
    """Index of the `[*]` step in a literal JSON path, or None (no wildcard, or not literal)."""
    if not isinstance(path, exp.JSONPath):
        return None
    steps = [i for i, step in enumerate(path.expressions)
             if isinstance(step, exp.JSONPathSubscript) and isinstance(step.this, exp.JSONPathWildcard)]
    if len(steps) > 1:
        raise QueryError(f"{path.sql('duckdb')}: only one [*] per JSON path translates to Spark")
    return steps[0] if steps else None


def _json_list(node: exp.JSONExtract | exp.JSONExtractScalar) -> exp.Expression:
    """`x -> '$.a[*].b'` as Spark: the array at `$.a`, then `$.b` of each element."""
    path = node.expression
    at = _wildcard_at(path)
    head = exp.JSONPath(expressions=path.expressions[:at])
    items = _fn("FROM_JSON", _fn("GET_JSON_OBJECT", node.this, head),
                exp.Literal.string("ARRAY<STRING>"))
    rest = path.expressions[at + 1:]
    if not rest:
        return items
    element = exp.to_identifier("element")
    tail = exp.JSONPath(expressions=[exp.JSONPathRoot(), *rest])
    return _fn("TRANSFORM", items, exp.Lambda(this=_fn("GET_JSON_OBJECT", exp.column(element), tail),
                                               expressions=[element]))


def _is_json_merge(node: exp.Anonymous) -> bool:
    step = node.expressions[1] if len(node.expressions) == 2 else None
    return (isinstance(step, exp.Lambda) and isinstance(step.this, exp.Anonymous)
            and step.this.name.lower() == "json_merge_patch" and isinstance(node.expressions[0], exp.ArrayAgg))


def _spark_merge(aggregate: exp.ArrayAgg) -> exp.Expression:
    """The JSON objects of `list(p ORDER BY k1, k2, ...)`, folded in that order.

    Spark's COLLECT_LIST has no order, so the keys travel in a struct that ARRAY_SORT
    orders: ascending, NULLs first (run_attributes asks `ts NULLS FIRST`; its other keys
    are never NULL)."""
    ordered = aggregate.this
    value, keys = (ordered.this, ordered.expressions) if isinstance(ordered, exp.Order) else (ordered, [])
    for key in keys:
        if key.args.get("desc"):
            raise QueryError(f"{aggregate.sql('duckdb')}: the Spark merge orders ascending only")
    fields = [exp.alias_(key.this.copy(), f"k{i}") for i, key in enumerate(keys)]
    rows = _fn("ARRAY_SORT", _fn("COLLECT_LIST", _fn("STRUCT", *fields, exp.alias_(value.copy(), "object"))))
    objects = _fn("TRANSFORM", rows, exp.Lambda(this=exp.column("object", "r"), expressions=[exp.to_identifier("r")]))
    return sqlglot.parse_one(SPARK_MERGE.format(objects=objects.sql("spark")), read="spark")


def _fn(name: str, *args: exp.Expression) -> exp.Anonymous:
    return exp.Anonymous(this=name, expressions=list(args))
