"""Views in other engines' SQL: the DuckDB idioms Spark reads differently are rewritten.

tests/test_spark.py runs every view on Spark; these check the rewrites where Spark is not
installed, and the idioms they refuse rather than translate wrongly."""

from __future__ import annotations

import pytest
import sqlglot

from tracewh.errors import QueryError
from tracewh.queries.dialects import transpile_view
from tracewh.queries.registry import load_views


def spark(select: str) -> str:
    return transpile_view(f"CREATE VIEW v AS {select}", "spark", pretty=False)


def test_json_list_paths_become_arrays_on_spark():
    assert spark("SELECT payload ->> '$.files[*]' AS f FROM t") == (
        "CREATE VIEW v AS SELECT FROM_JSON(GET_JSON_OBJECT(payload, '$.files'), 'ARRAY<STRING>') AS f FROM t")
    assert "TRANSFORM(FROM_JSON(GET_JSON_OBJECT(payload, '$.calls'), 'ARRAY<STRING>'), element -> " \
           "GET_JSON_OBJECT(element, '$.name'))" in spark("SELECT payload ->> '$.calls[*].name' AS n FROM t")


def test_spark_gets_exact_quantiles_and_double_arithmetic():
    sql = spark("SELECT quantile_cont(x, 0.9) AS p, 100.0 * count(*) / sum(n) AS pct FROM t")
    assert "PERCENTILE(x, CAST(0.9 AS DOUBLE))" in sql and "CAST(100.0 AS DOUBLE) * COUNT(*)" in sql


def test_idioms_without_a_faithful_spark_form_are_refused():
    with pytest.raises(QueryError, match=r"only one \[\*\]"):
        spark("SELECT payload -> '$.a[*].b[*]' AS x FROM t")
    with pytest.raises(QueryError, match="ascending only"):
        spark("SELECT list_reduce(list(p::JSON ORDER BY ts DESC), lambda a, b: json_merge_patch(a, b)) AS m FROM t")


def test_every_view_transpiles_to_sql_spark_can_parse():
    for view in load_views():
        sqlglot.parse_one(transpile_view(view.sql, "spark"), read="spark")
