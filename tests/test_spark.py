"""Scale-out: the views, transpiled to Spark SQL, give DuckDB's rows on Spark.

Spark runs in local mode and reads the demo store's Parquet files itself: the script
`tracewh views --sql --dialect spark` prints (events_raw over WAREHOUSE/events, then every
view) is all it gets. Needs Java and `pip install -e '.[spark]'`; skipped without pyspark,
unless TRACEWH_SPARK_TESTS=1 (as in .ci/run), when a missing pyspark fails the run.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
import os
import re
from pathlib import Path

import pytest
from helpers import tracewh

import tracewh as tw
from tracewh.queries.registry import load_views

if os.environ.get("TRACEWH_SPARK_TESTS") == "1":
    import pyspark  # noqa: F401
else:
    pytest.importorskip("pyspark", reason="the spark extra is not installed (docs/scale-out.md)")

pytestmark = [pytest.mark.spark, pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas")]

HEADLINE = ["d52_rs_at_k", "d52_critical", "ecb_table1", "dcb_quality", "dcb_fidelity", "dcb_self_preference", "dcb_ceiling"]


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("home")
    tracewh("demo", "--tasks", "12", env=os.environ | {"TRACEWH_HOME": str(home)}, check=True)
    return home / "demo" / "warehouse"


@pytest.fixture(scope="module")
def duckdb_store(store):
    wh = tw.open(store)  # one connection: building blocks are materialized once for all views
    yield wh
    wh.close()


@pytest.fixture(scope="module")
def spark(store, tmp_path_factory):
    from pyspark.sql import SparkSession

    # 2 GB of heap: at Spark's default of 1 GB, CI once saw the JVM die mid-query (Spark ends the
    # driver's JVM on an executor's fatal error in local mode), failing the run on a headline view.
    session = (SparkSession.builder.master("local[2]").appName("tracewh-tests")
               .config("spark.driver.memory", "2g").config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "4")
               .config("spark.sql.session.timeZone", "UTC")
               # Spark's own tables would go to ./spark-warehouse, the checkout the tests run in
               .config("spark.sql.warehouse.dir", str(tmp_path_factory.mktemp("spark-warehouse")))
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    script = tracewh("views", "--sql", "--dialect", "spark", "-w", store, check=True).out
    for statement in re.split(r";\n(?=\n|$)", script):
        if any(line.strip() and not line.lstrip().startswith("--") for line in statement.splitlines()):
            session.sql(statement)
    yield session
    session.stop()


@pytest.mark.parametrize("view", [v.name for v in load_views()])
def test_view_gives_duckdbs_rows_on_spark(duckdb_store, spark, view):
    duck = duckdb_store.sql(f"select * from {view}")
    on_spark = spark.sql(f"select * from {view}")
    assert on_spark.columns == duck.columns
    duck_rows = [tuple(row.values()) for row in duck.arrow().read_all().to_pylist()]  # Arrow: no pytz needed
    spark_rows = [tuple(row) for row in on_spark.collect()]
    assert_same_rows(duck_rows, spark_rows, view)
    # The comparison proves nothing on empty views: every headline metric has numbers here.
    assert spark_rows or view not in HEADLINE, f"{view} is empty"


def assert_same_rows(duck: list[tuple], on_spark: list[tuple], view: str) -> None:
    """Same rows in any order; floats equal to 1e-9 (Spark sums in another order)."""
    assert len(duck) == len(on_spark), view
    left, right = sorted(map(_normal, duck), key=_order), sorted(map(_normal, on_spark), key=_order)
    for a, b in zip(left, right):
        assert _close(a, b), f"{view}: DuckDB {a} != Spark {b}"


def _normal(value):
    """One Python form for what both engines return: JSON text parsed (DuckDB keeps JSON
    strings quoted and JSON null as 'null', Spark returns the string and SQL NULL),
    decimals as floats, timestamps as naive UTC, lists as tuples."""
    if isinstance(value, (tuple, list)):
        return tuple(map(_normal, value))
    if hasattr(value, "asDict"):  # a Spark struct
        value = value.asDict(recursive=True)
    if isinstance(value, dict):
        return tuple(sorted((k, _normal(v)) for k, v in value.items()))
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    if isinstance(value, str) and (value[:1] in '[{"' or value == "null"):
        try:
            return _normal(json.loads(value))
        except ValueError:
            return value
    return value


def _order(row: tuple) -> tuple:
    return tuple((v is None, f"{v:.6g}" if isinstance(v, float) else str(v)) for v in row)


def _close(a, b) -> bool:
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and (isinstance(a, float) or isinstance(b, float)):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(map(_close, a, b))
    return a == b
